"""The language server object: state shared by the handlers, and how it talks to the client.

Execution model (docs/editor.md, /work/shared/reference/lsp-notes.md §1.3-1.4):
- handlers are ``async def`` on the event loop and only read in-memory state or await our own
  executors; nothing long ever runs in ``ls.thread_pool`` (pygls reads stdin with it);
- each search runs ``Search.run`` on a thread of ``search_pool``; its events are handed to the loop
  with ``call_soon_threadsafe``, and every send to the client happens on the loop thread;
- SQLite reads for hover and code actions run on ``io_pool``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from kernelevolve.search.history import History
from kernelevolve.search.spec_from_selection import OpTarget, list_targets, parse_source, problem_path_for
from kernelevolve.server.lsp.protocol import BestSoFar
from kernelevolve.server.lsp.settings import Settings
from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

logger = logging.getLogger(__name__)
T = TypeVar("T")
VERSION = "0.1.0"


@dataclass(frozen=True)
class DocInfo:
    uri: str
    text: str
    path: Path | None  # None for untitled buffers
    display_name: str
    version: int | None


@dataclass(frozen=True)
class DocTarget:
    target: OpTarget
    problem_paths: tuple[Path, ...]  # where its problem file is (or would be) kept


class EvolveServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__(
            "kernelevolve", VERSION, text_document_sync_kind=types.TextDocumentSyncKind.Incremental
        )
        self.settings = Settings()
        self.root = Path.cwd()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.search_pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="kernelevolve-search")
        self.io_pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="kernelevolve-io")
        self.best: dict[str, BestSoFar] = {}  # problem path -> best known (live runs and history)
        self._history: History | None = None
        self._history_path: Path | None = None
        self._targets: dict[str, tuple[int, list[DocTarget]]] = {}
        self.background: set[asyncio.Task[Any]] = set()
        self.pending_messages: list[str] = []
        # Hover's view of history, re-read only after something was recorded (bump the generation).
        self.history_generation = 0
        self.history_cache: dict[
            tuple[str, ...], tuple[int, list[Any], str]
        ] = {}  # settings problems found before `initialized`
        # Set by the modules that own them (jobs, watching), typed loosely to avoid import cycles.
        self.jobs: Any = None
        self.watcher: Any = None

    # -- paths and history ------------------------------------------------------------------------

    @property
    def state_dir(self) -> Path:
        return self.root / ".kernelevolve"

    @property
    def problems_dir(self) -> Path:
        return self.state_dir / "problems"

    @property
    def db_path(self) -> Path:
        path = Path(self.settings.db_path).expanduser()
        return path if path.is_absolute() else self.root / path

    def history(self) -> History:
        """The shared History (thread-safe); call from io_pool threads, not the loop."""
        if self._history is None or self._history_path != self.db_path:
            if self._history is not None:
                self._history.close()
            self._history = History(self.db_path)
            self._history_path = self.db_path
        return self._history

    async def in_io(self, fn: Callable[[], T]) -> T:
        return await asyncio.get_running_loop().run_in_executor(self.io_pool, fn)

    # -- documents ----------------------------------------------------------------------------------

    def doc(self, uri: str) -> DocInfo:
        document = self.workspace.get_text_document(uri)
        path_text = to_fs_path(uri) if uri.startswith("file:") else None
        path = Path(path_text) if path_text else None
        try:
            text = document.source
        except OSError:
            text = ""
        name = path.name if path else uri.rsplit("/", 1)[-1].rsplit(":", 1)[-1] or "untitled"
        return DocInfo(uri, text, path, name, document.version)

    def targets(self, uri: str) -> list[DocTarget]:
        """The ops of a document with their problem paths, cached per document text."""
        info = self.doc(uri)
        key = hash(info.text)
        cached = self._targets.get(uri)
        if cached is not None and cached[0] == key:
            return cached[1]
        try:
            tree = parse_source(info.text, info.display_name)
        except Exception:
            found: list[DocTarget] = []
        else:
            stem = Path(info.display_name).stem
            found = []
            for target in list_targets(tree, info.text.splitlines()):
                derived = problem_path_for(self.problems_dir, stem, target.qualname)
                paths = (info.path, derived) if target.kind == "problem" and info.path else (derived,)
                found.append(DocTarget(target, tuple(p.resolve() for p in paths if p is not None)))
        self._targets[uri] = (key, found)
        return found

    def target_at(self, uri: str, line: int) -> DocTarget | None:
        for item in self.targets(uri):
            if item.target.kind == "problem" or item.target.def_line <= line <= item.target.end_line:
                return item
        return None

    def best_for(self, item: DocTarget) -> BestSoFar | None:
        known = [self.best[str(p)] for p in item.problem_paths if str(p) in self.best]
        return max(known, key=lambda b: (not b.stale, b.timing == "measured", b.speedup), default=None)

    # -- talking to the client (loop thread only) -------------------------------------------------

    def has_capability(self, dotted: str) -> bool:
        node: Any = self.client_capabilities
        for part in dotted.split("."):
            node = getattr(node, part, None)
            if node is None:
                return False
        return bool(node)

    def show(self, message: str, level: types.MessageType = types.MessageType.Info) -> None:
        self.window_show_message(types.ShowMessageParams(type=level, message=message))
        self.window_log_message(types.LogMessageParams(type=level, message=message))

    def log(self, message: str, level: types.MessageType = types.MessageType.Log) -> None:
        self.window_log_message(types.LogMessageParams(type=level, message=message))

    def refresh_hints(self) -> None:
        if self.has_capability("workspace.inlay_hint.refresh_support"):
            self.spawn(self._refresh_hints())

    async def _refresh_hints(self) -> None:
        try:
            await self.workspace_inlay_hint_refresh_async(None)
        except Exception as exc:  # a client that errors on refresh must not break anything
            logger.info("inlayHint/refresh failed: %s", exc)

    def spawn(self, coro: Awaitable[Any]) -> asyncio.Task[Any]:
        """A background task kept alive until done; exceptions are logged and shown."""
        task: asyncio.Task[Any] = asyncio.ensure_future(self._guarded(coro))
        self.background.add(task)
        task.add_done_callback(self.background.discard)
        return task

    async def _guarded(self, coro: Awaitable[Any]) -> Any:
        try:
            return await coro
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            logger.exception("background task failed")
            self.show(f"kernelevolve: internal error: {exc}", types.MessageType.Error)
            return None

    def close(self) -> None:
        self.search_pool.shutdown(wait=False, cancel_futures=True)
        self.io_pool.shutdown(wait=False, cancel_futures=True)
        if self._history is not None:
            self._history.close()
            self._history = None
