"""The files "Apply best kernel" writes, as an undoable workspace edit (and their diffs).

The contents come from the engine's export (``search/export.py``: the kernel file defining
``ModelNew`` and the ``Dispatch`` wrapper), rendered in memory and sent to the client as
``workspace/applyEdit`` so the editor owns the write and can undo it.
"""

from __future__ import annotations

import difflib
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelevolve.search.export import render_outcome_files
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
    """Kernel + dispatch files for ``candidate`` (search/export.py renders them), in ``dest_dir``."""
    out = dest_dir / f"{problem_path.stem}_evolved.py"
    files = render_outcome_files(history, problem_path, candidate.id, out)
    return [PlannedFile(files.kernel_path, files.kernel), PlannedFile(files.dispatch_path, files.dispatch)]


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
