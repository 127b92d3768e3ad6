"""Several evaluations share one GPU; a timed measurement has it to itself.

Each GPU has a lock file under a directory every kernelevolve process on the machine agrees on
(``gpu_lock_path``). Work that runs on the GPU without producing a number (building inputs,
correctness runs, the ghost replay, compiling and warming the torch.compile baseline) holds the
lock *shared*; a timed measurement holds it *exclusive*, so no other evaluation's kernels run while
a number is being taken. CPU-only work (starting Python, importing torch, Triton and Inductor
compiles between launches) holds nothing, so it overlaps other evaluations' benchmarks: that is
what lets one GPU keep several evaluation workers busy.

A turnstile file gives a waiting measurement priority over new shared holders, so timing never
starves. flock(2) locks belong to the open file and the kernel drops them when the process dies,
so a killed worker never leaves a GPU locked.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

Mode = Literal["shared", "exclusive"]


def gpu_lock_path(lock_dir: Path, visible_device: str) -> Path:
    """The lock file of one GPU, named after its CUDA_VISIBLE_DEVICES entry (index or UUID)."""
    safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in visible_device.strip()) or "0"
    return lock_dir / f"gpu-{safe}.lock"


class GpuLock:
    """A reader-writer lock on one GPU across processes, with writer priority.

    ``before_release`` runs before the lock is given up (on CUDA: synchronize), so work queued on
    the device while the lock was held cannot spill into another process's measurement.
    """

    def __init__(self, path: Path, before_release: Callable[[], None] | None = None) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC
        self._main = os.open(path, flags, 0o666)
        self._turnstile = os.open(path.with_name(path.name + ".turnstile"), flags, 0o666)
        self._before_release = before_release
        self._mode: Mode | None = None
        self.waited_s = 0.0  # time spent waiting for other evaluations
        self.exclusive_s = 0.0  # time this process held the GPU to itself

    @property
    def mode(self) -> Mode | None:
        return self._mode

    def _acquire(self, mode: Mode) -> None:
        start = time.monotonic()
        fcntl.flock(self._turnstile, fcntl.LOCK_EX)
        try:
            fcntl.flock(self._main, fcntl.LOCK_EX if mode == "exclusive" else fcntl.LOCK_SH)
        finally:
            fcntl.flock(self._turnstile, fcntl.LOCK_UN)
        self.waited_s += time.monotonic() - start
        self._mode = mode

    def _release(self) -> None:
        try:
            if self._before_release is not None:
                self._before_release()
        finally:
            fcntl.flock(self._main, fcntl.LOCK_UN)
            self._mode = None

    @contextmanager
    def shared(self) -> Iterator[None]:
        """GPU work that produces no number; nested inside either mode it changes nothing."""
        if self._mode is not None:
            yield
            return
        self._acquire("shared")
        try:
            yield
        finally:
            self._release()

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """A timed region. Upgrading from shared lets go first, so two upgraders cannot deadlock."""
        previous = self._mode
        if previous == "exclusive":
            yield
            return
        if previous == "shared":
            self._release()
        self._acquire("exclusive")
        start = time.monotonic()
        try:
            yield
        finally:
            self.exclusive_s += time.monotonic() - start
            self._release()
            if previous == "shared":
                self._acquire("shared")

    def close(self) -> None:
        for fd in (self._main, self._turnstile):
            os.close(fd)


class NoLock:
    """The CPU interpreter, or a worker told of no lock directory: nothing to share."""

    waited_s = 0.0
    exclusive_s = 0.0
    mode: Mode | None = None

    @contextmanager
    def shared(self) -> Iterator[None]:
        yield

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        yield


_current: GpuLock | NoLock = NoLock()


def current() -> GpuLock | NoLock:
    """The lock of the GPU this process evaluates on (a no-op lock on the CPU)."""
    return _current


def install(lock: GpuLock | NoLock) -> None:
    global _current
    _current = lock
