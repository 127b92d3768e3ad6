"""The cross-process GPU lock: shared holders coexist, a measurement excludes them, and it wins."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kernelevolve.search.gpu_lock import GpuLock, NoLock, gpu_lock_path

HOLDER = """
import sys, time
from pathlib import Path
from kernelevolve.search.gpu_lock import GpuLock

lock_path, mode, name, log, release_when = sys.argv[1:6]
def note(word):
    with open(log, "a") as fh:
        fh.write(f"{name}-{word}\\n")
lock = GpuLock(Path(lock_path))
note("wait")
with lock.exclusive() if mode == "exclusive" else lock.shared():
    note("in")
    deadline = time.monotonic() + 20
    while release_when != "-" and release_when not in Path(log).read_text().split():
        if time.monotonic() > deadline:
            note("gave-up")
            break
        time.sleep(0.02)
    note("out")
"""

TIMEOUT_S = 30


def _events(log: Path) -> list[str]:
    return log.read_text().split() if log.exists() else []


def _wait_for(log: Path, event: str) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while event not in _events(log):
        assert time.monotonic() < deadline, f"{event} never happened: {_events(log)}"
        time.sleep(0.02)


def _blocked_waiters(path: Path) -> int:
    """flock requests the kernel is holding back on ``path`` (the '->' lines of /proc/locks)."""
    inode = f":{os.stat(path).st_ino} "
    return sum(1 for line in Path("/proc/locks").read_text().splitlines() if "->" in line and inode in line)


def _wait_blocked(path: Path, count: int) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while _blocked_waiters(path) < count:
        assert time.monotonic() < deadline, f"fewer than {count} blocked waiters on {path}"
        time.sleep(0.02)


def _start(lock: Path, mode: str, name: str, log: Path, release_when: str = "-") -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", HOLDER, str(lock), mode, name, str(log), release_when])


def _finish(*procs: subprocess.Popen[bytes]) -> None:
    for p in procs:
        assert p.wait(timeout=TIMEOUT_S) == 0


needs_proc_locks = pytest.mark.skipif(not Path("/proc/locks").exists(), reason="needs Linux /proc/locks")


def test_shared_holders_hold_the_gpu_at_the_same_time(tmp_path: Path) -> None:
    lock, log = tmp_path / "gpu-0.lock", tmp_path / "log"
    a = _start(lock, "shared", "A", log, release_when="B-in")  # A lets go only once B is in
    _wait_for(log, "A-in")
    b = _start(lock, "shared", "B", log)
    _finish(a, b)
    assert "A-gave-up" not in _events(log)
    assert _events(log).index("B-in") < _events(log).index("A-out")


@needs_proc_locks
def test_a_measurement_waits_for_shared_work_and_excludes_it(tmp_path: Path) -> None:
    lock, log = tmp_path / "gpu-0.lock", tmp_path / "log"
    a = _start(lock, "shared", "A", log, release_when="go")
    _wait_for(log, "A-in")
    m = _start(lock, "exclusive", "M", log, release_when="go2")
    _wait_blocked(lock, 1)
    assert "M-in" not in _events(log)
    with log.open("a") as fh:
        fh.write("go\n")
    _wait_for(log, "M-in")
    c = _start(lock, "shared", "C", log)
    _wait_blocked(lock, 1)  # C is held back by M's exclusive hold
    assert "C-in" not in _events(log)
    with log.open("a") as fh:
        fh.write("go2\n")
    _finish(a, m, c)
    events = _events(log)
    assert events.index("A-out") < events.index("M-in") < events.index("M-out") < events.index("C-in")


@needs_proc_locks
def test_a_waiting_measurement_goes_before_shared_work_that_arrives_later(tmp_path: Path) -> None:
    lock, log = tmp_path / "gpu-0.lock", tmp_path / "log"
    a = _start(lock, "shared", "A", log, release_when="go")
    _wait_for(log, "A-in")
    m = _start(lock, "exclusive", "M", log)
    _wait_blocked(lock, 1)  # M holds the turnstile and waits for A
    c = _start(lock, "shared", "C", log)
    _wait_blocked(lock.with_name(lock.name + ".turnstile"), 1)  # C queues behind M
    assert "C-in" not in _events(log)
    with log.open("a") as fh:
        fh.write("go\n")
    _finish(a, m, c)
    events = _events(log)
    assert events.index("M-in") < events.index("M-out") < events.index("C-in")


def test_a_killed_holder_leaves_the_gpu_free(tmp_path: Path) -> None:
    lock, log = tmp_path / "gpu-0.lock", tmp_path / "log"
    holder = _start(lock, "exclusive", "K", log, release_when="never")
    _wait_for(log, "K-in")
    holder.send_signal(signal.SIGKILL)
    holder.wait(timeout=TIMEOUT_S)
    _finish(_start(lock, "exclusive", "N", log))
    assert "N-out" in _events(log)


def test_upgrading_inside_shared_work_returns_to_shared(tmp_path: Path) -> None:
    released: list[str] = []
    lock = GpuLock(tmp_path / "gpu-0.lock", before_release=lambda: released.append("sync"))
    with lock.shared():
        assert lock.mode == "shared"
        with lock.exclusive():
            assert lock.mode == "exclusive"
            with lock.shared():  # nested: changes nothing
                assert lock.mode == "exclusive"
        assert lock.mode == "shared"
    assert lock.mode is None
    assert released == ["sync", "sync", "sync"]  # before every hand-back: shared, exclusive, shared
    assert lock.exclusive_s > 0.0
    lock.close()


def test_a_failing_sync_still_releases_the_lock(tmp_path: Path) -> None:
    def broken_sync() -> None:
        raise RuntimeError("CUDA error: an illegal memory access was encountered")

    lock = GpuLock(tmp_path / "gpu-0.lock", before_release=broken_sync)
    with pytest.raises(RuntimeError), lock.shared():
        pass
    assert lock.mode is None
    other = GpuLock(tmp_path / "gpu-0.lock")
    with other.exclusive():  # would block forever if the first lock were still held
        assert other.mode == "exclusive"
    lock.close()
    other.close()


def test_lock_files_are_named_after_the_visible_device() -> None:
    base = Path("/locks")
    assert gpu_lock_path(base, "3") == base / "gpu-3.lock"
    uuid = "GPU-8f1e/../x"
    assert gpu_lock_path(base, uuid).parent == base
    assert gpu_lock_path(base, uuid).name == "gpu-GPU-8f1e____x.lock"


def test_the_cpu_lock_is_a_no_op() -> None:
    lock = NoLock()
    with lock.shared(), lock.exclusive():
        assert lock.waited_s == 0.0
