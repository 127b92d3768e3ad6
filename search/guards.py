"""Worker-side tamper checks around candidate calls: replaced functions, new threads, child processes.

``IntegrityGuard`` records the identity of every callable on a set of owners (``time``,
``builtins``, ``torch.cuda``, ``torch.cuda.Event``, ``triton.testing``, ``torch``, ``torch.Tensor``
and the harness's own modules) and names any that changed: a candidate that swaps
``time.perf_counter`` or ``torch.allclose`` for its own is caught the next time the guard looks.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any

import psutil
import torch

# Owners whose every callable is watched, by dotted name.
TIMER_OWNERS = ("time", "torch.cuda", "torch.cuda.Event", "triton.testing")
BROAD_OWNERS = (
    *TIMER_OWNERS,
    "builtins",
    "torch",
    "torch.Tensor",
    "torch.testing",
    "kernelevolve.search.correctness",
    "kernelevolve.search.inputs",
    "kernelevolve.search.ghost",
    "kernelevolve.search.guards",
    "kernelevolve.search.worker",
    "kernelevolve.search.perf",
    "kernelevolve.search.timing",
)


def _resolve(dotted: str) -> Any | None:
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        mod = sys.modules.get(".".join(parts[:i]))
        if mod is None:
            continue
        obj: Any = mod
        for attr in parts[i:]:
            obj = getattr(obj, attr, None)
            if obj is None:
                return None
        return obj
    return None


def _callables(owner: Any) -> dict[str, int]:
    try:
        items = list(vars(owner).items())
    except TypeError:
        return {}
    return {k: id(v) for k, v in items if callable(v) or isinstance(v, staticmethod | classmethod)}


class IntegrityGuard:
    def __init__(self, owners: tuple[str, ...]) -> None:
        self.owners = owners
        self.snapshot: dict[str, dict[str, int]] = {}
        self.held: list[Any] = []  # keep the originals alive so an id cannot be reused

    def take(self) -> None:
        self.snapshot = {}
        self.held = []
        for dotted in self.owners:
            owner = _resolve(dotted)
            if owner is None:
                continue
            self.held.append(owner)
            self.held.extend(vars(owner).values() if hasattr(owner, "__dict__") else [])
            self.snapshot[dotted] = _callables(owner)

    def tampered(self) -> list[str]:
        """Dotted names whose object changed or disappeared since ``take``."""
        changed = []
        for dotted, before in self.snapshot.items():
            owner = _resolve(dotted)
            after = _callables(owner) if owner is not None else {}
            changed += [f"{dotted}.{k}" for k, v in before.items() if after.get(k) != v]
        return changed


def native_thread_count() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return threading.active_count()


@dataclass
class ProcessState:
    python_threads: int
    native_threads: int
    children: int

    @classmethod
    def now(cls) -> ProcessState:
        try:
            children = len([c for c in psutil.Process().children() if c.status() != psutil.STATUS_ZOMBIE])
        except psutil.Error:
            children = 0
        return cls(threading.active_count(), native_thread_count(), children)

    def grown_since(self, before: ProcessState) -> str | None:
        if self.python_threads > before.python_threads:
            return f"left {self.python_threads - before.python_threads} new Python thread(s) running"
        if self.native_threads > before.native_threads:
            return f"left {self.native_threads - before.native_threads} new native thread(s) running"
        if self.children > before.children:
            return f"left {self.children - before.children} child process(es) running"
        return None


def warm_runtime(device: str) -> None:
    """Start the runtime's own lazy threads (intra-op pool, CUDA context) before anything is watched."""
    a = torch.randn(256, 256)
    (a @ a).sum().item()
    torch.ones(1 << 20).add_(1).sum().item()
    if device.startswith("cuda"):
        torch.cuda.init()
        x = torch.ones(1024, device=device)
        (x * 2).sum().item()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        end.record()
        end.synchronize()
        start.elapsed_time(end)
    time.perf_counter()
