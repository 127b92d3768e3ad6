"""search/watch.py: real watchdog on a temp folder; only real content changes are reported."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from kernelevolve.search.watch import KernelWatcher, content_hash, find_kernel_files


def wait_for(event: threading.Event, seconds: float = 10.0) -> bool:
    return event.wait(seconds)


def test_a_change_is_reported_once_with_the_previous_hash_and_rewrites_of_equal_text_are_not(
    tmp_path: Path,
) -> None:
    kernel = tmp_path / "op_evolved.py"
    kernel.write_text("one\n")
    other = tmp_path / "unrelated.py"
    seen: list[tuple[str, str | None]] = []
    changed = threading.Event()

    def on_change(path: Path, previous: str | None) -> None:
        seen.append((path.name, previous))
        changed.set()

    watcher = KernelWatcher(on_change, debounce_s=0.2)
    watcher.watch(kernel)
    watcher.start()
    try:
        before = content_hash(kernel)
        for text in ("tw", "two\n"):  # an editor writing in two steps: one report
            kernel.write_text(text)
            time.sleep(0.05)
        assert wait_for(changed)
        other.write_text("not watched")
        kernel.write_text("two\n")  # same content again: nothing to re-verify
        time.sleep(1.0)
    finally:
        watcher.stop()
    assert seen == [("op_evolved.py", before)]


def test_kernel_files_are_found_but_virtualenvs_and_hidden_folders_are_skipped(tmp_path: Path) -> None:
    for rel in ("a_evolved.py", "pkg/b_evolved.py", ".venv/lib/c_evolved.py", ".hidden/d_evolved.py", "e.py"):
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")
    found = sorted(p.relative_to(tmp_path).as_posix() for p in find_kernel_files(tmp_path))
    assert found == ["a_evolved.py", "pkg/b_evolved.py"]
