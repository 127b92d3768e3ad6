"""The files "Apply best kernel" writes, as an undoable workspace edit (and their diffs).

The contents come from the engine's export (``search/export.py``: the kernel file defining
``ModelNew`` and the ``Dispatch`` wrapper) rendered into a scratch folder, then sent to the client
as ``workspace/applyEdit`` so the editor owns the write and can undo it.
"""

from __future__ import annotations

import difflib
import inspect
import logging
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelevolve.search.history import CandidateRecord, History
from lsprotocol import types
from pygls.uris import from_fs_path

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class PlannedFile:
    path: Path
    text: str

    @property
    def uri(self) -> str:
        return from_fs_path(str(self.path)) or self.path.as_uri()

    def diff(self) -> str:
        try:
            old = self.path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            old = ""
        return "".join(
            difflib.unified_diff(
                old.splitlines(keepends=True),
                self.text.splitlines(keepends=True),
                f"a/{self.path.name}",
                f"b/{self.path.name}",
            )
        )


def plan_files(
    history: History, candidate: CandidateRecord, problem_path: Path, dest_dir: Path
) -> list[PlannedFile]:
    """Kernel + dispatch files for ``candidate``, named after the problem, placed in ``dest_dir``."""
    stem = problem_path.stem
    rendered = _render_with_export(history, candidate, problem_path)
    if not rendered:
        header = (
            f"# Evolved by kernelevolve: candidate #{candidate.id} of run {candidate.run_id}, "
            f"{candidate.speedup or 0:.2f}x {candidate.timing_kind or ''} on {candidate.device or '?'}.\n"
            f"# Re-verify: kernelevolve eval {problem_path} {stem}_evolved.py\n"
        )
        rendered = {f"{stem}_evolved.py": header + candidate.source}
    return [PlannedFile(dest_dir / name, text) for name, text in sorted(rendered.items())]


def _render_with_export(history: History, candidate: CandidateRecord, problem_path: Path) -> dict[str, str]:
    """Ask search/export.py to write its files into a scratch folder and read them back."""
    try:
        from kernelevolve.search import export
    except ImportError:
        return {}
    fn = getattr(export, "export_candidate", None) or getattr(export, "export_best", None)
    if fn is None:
        return {}
    with tempfile.TemporaryDirectory(prefix="kernelevolve-apply-") as tmp:
        scratch = Path(tmp)
        out = scratch / f"{problem_path.stem}_evolved.py"
        kwargs: dict[str, Any] = {}
        params = inspect.signature(fn).parameters
        for name, value in (
            ("history", history),
            ("candidate", candidate),
            ("candidate_id", candidate.id),
            ("problem", problem_path),
            ("problem_path", problem_path),
            ("out_path", out),
            ("out", out),
        ):
            if name in params:
                kwargs[name] = value
        try:
            fn(**kwargs)
        except Exception as exc:
            logger.warning("export failed, applying the kernel file only: %s", exc)
            return {}
        return {p.name: p.read_text(encoding="utf-8") for p in scratch.iterdir() if p.suffix == ".py"}


def workspace_edit(
    files: list[PlannedFile], *, document_changes: bool, can_create: bool
) -> types.WorkspaceEdit:
    """Create (or overwrite) each file and set its whole text."""
    if document_changes and can_create:
        changes: list[Any] = []
        for f in files:
            changes.append(
                types.CreateFile(
                    uri=f.uri, options=types.CreateFileOptions(overwrite=False, ignore_if_exists=True)
                )
            )
            changes.append(
                types.TextDocumentEdit(
                    text_document=types.OptionalVersionedTextDocumentIdentifier(uri=f.uri, version=None),
                    edits=[types.TextEdit(range=_whole(f.path), new_text=f.text)],
                )
            )
        return types.WorkspaceEdit(document_changes=changes)
    for f in files:  # no resource operations: the client can only edit existing files
        if not f.path.exists():
            f.path.parent.mkdir(parents=True, exist_ok=True)
            f.path.write_text("", encoding="utf-8")
    return types.WorkspaceEdit(
        changes={f.uri: [types.TextEdit(range=_whole(f.path), new_text=f.text)] for f in files}
    )


def _whole(path: Path) -> types.Range:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        lines = []
    return types.Range(
        start=types.Position(line=0, character=0), end=types.Position(line=len(lines), character=0)
    )
