"""Watch kernel files on disk (watchdog) and report real content changes, debounced.

Engine side, no pygls: the language server gives a callback and hands it to its loop. Only the
folders holding watched files are observed (non-recursively), so a big workspace costs nothing.
A change is reported once its content hash differs from the last one seen, after ``debounce_s``
of quiet (editors write files in several steps).
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

logger = logging.getLogger(__name__)
KERNEL_SUFFIX = "_evolved.py"
_SKIP_DIRS = {".git", ".venv", "venv", "node_modules", "__pycache__", "build", "dist", ".mypy_cache"}


def content_hash(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def find_kernel_files(root: Path, max_depth: int = 4) -> Iterator[Path]:
    """``*_evolved.py`` files under ``root``, skipping hidden, virtualenv and build folders."""
    root = root.resolve()
    base_depth = len(root.parts)
    for folder, dirs, files in os.walk(root):
        depth = len(Path(folder).parts) - base_depth
        dirs[:] = [d for d in dirs if d not in _SKIP_DIRS and not d.startswith(".") and depth < max_depth]
        for name in files:
            if name.endswith(KERNEL_SUFFIX):
                yield Path(folder) / name


class KernelWatcher:
    def __init__(self, on_change: Callable[[Path, str | None], None], *, debounce_s: float = 0.3) -> None:
        """``on_change(path, previous_hash)`` runs on a watchdog/timer thread."""
        self.on_change = on_change
        self.debounce_s = debounce_s
        self._observer = Observer()
        self._observer.daemon = True
        self._lock = threading.Lock()
        self._files: dict[Path, str | None] = {}  # path -> last content hash
        self._dirs: set[Path] = set()
        self._timers: dict[Path, threading.Timer] = {}
        self._handler = _Handler(self)
        self._started = False

    def watch(self, path: Path) -> None:
        path = Path(path).resolve()
        with self._lock:
            if path not in self._files:
                self._files[path] = content_hash(path)
            folder = path.parent
            if folder not in self._dirs and folder.is_dir():
                self._dirs.add(folder)
                self._observer.schedule(self._handler, str(folder), recursive=False)

    def watched(self) -> list[Path]:
        with self._lock:
            return sorted(self._files)

    def start(self) -> None:
        if not self._started:
            self._observer.start()
            self._started = True

    def stop(self) -> None:
        with self._lock:
            for timer in self._timers.values():
                timer.cancel()
            self._timers.clear()
        if self._started:
            self._observer.stop()
            self._observer.join(timeout=5)
            self._started = False

    def _touched(self, raw: str) -> None:
        path = Path(raw).resolve()
        with self._lock:
            if path not in self._files:
                return
            old = self._timers.pop(path, None)
            if old is not None:
                old.cancel()
            timer = threading.Timer(self.debounce_s, self._settled, args=(path,))
            timer.daemon = True
            self._timers[path] = timer
            timer.start()

    def _settled(self, path: Path) -> None:
        digest = content_hash(path)
        with self._lock:
            self._timers.pop(path, None)
            previous = self._files.get(path)
            if digest is None or digest == previous:
                return
            self._files[path] = digest
        try:
            self.on_change(path, previous)
        except Exception:
            logger.exception("kernel file change callback failed for %s", path)


class _Handler(FileSystemEventHandler):
    def __init__(self, watcher: KernelWatcher) -> None:
        self.watcher = watcher

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.is_directory or event.event_type not in ("modified", "created", "moved", "closed"):
            return
        target = getattr(event, "dest_path", "") or event.src_path
        self.watcher._touched(os.fsdecode(target))
