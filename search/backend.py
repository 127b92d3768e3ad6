"""Evaluation backends: where the engine's candidates get evaluated.

The engine only needs ``submit`` (returns a future of the ``EvalResult``), ``slots`` (how many
evaluations may be in flight) and ``close``. ``LocalProcessBackend`` runs ``harness.evaluate``
on a thread pool; each evaluation is itself a sandboxed worker process, pinned to one GPU via
``EvalConfig.gpu_index`` when GPUs exist. A distributed backend (e.g. Ray actors, one per GPU
node) implements the same three members; see docs/search.md.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Protocol

from kernelevolve.search.config import EvalConfig
from kernelevolve.search.results import EvalResult


class EvalBackend(Protocol):
    @property
    def slots(self) -> int:
        """Evaluations that may run at once."""
        ...

    @property
    def gpus(self) -> list[int]:
        """GPU indices (into the caller's visible GPUs) the backend evaluates on; [] on the CPU."""
        ...

    def submit(self, problem: Path, source: str, config: EvalConfig, gpu: int | None) -> Future[EvalResult]:
        """Evaluate ``source`` against ``problem``; ``gpu`` pins the evaluation to one device."""
        ...

    def close(self, cancel_running: bool = False) -> None:
        """Stop accepting work; with ``cancel_running`` kill in-flight evaluations too."""
        ...


def visible_gpus(device: str) -> list[int]:
    """Indices of the GPUs this process may use, without initialising CUDA here.

    ``device`` "cpu" -> []. Otherwise CUDA_VISIBLE_DEVICES when set, else ``nvidia-smi -L``.
    """
    if device == "cpu":
        return []
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is not None:
        entries = [e for e in env.split(",") if e.strip() and e.strip() != "-1"]
        return list(range(len(entries)))
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return []
    try:
        out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=20, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return list(range(sum(1 for line in out.splitlines() if line.startswith("GPU "))))


EVALUATIONS_PER_GPU = 3


def default_slots(gpus: list[int]) -> int:
    """CUDA: up to three evaluations per GPU, as cores allow; else every core but one.

    Several per GPU are safe for timing: the harness's GPU lock (search/gpu_lock.py) gives each
    timed measurement the GPU to itself, while the other workers start up and compile on the CPU.
    """
    cores = max(1, (os.cpu_count() or 2) - 1)
    if gpus:
        return len(gpus) * max(1, min(EVALUATIONS_PER_GPU, cores // len(gpus)))
    return cores


class LocalProcessBackend:
    """A thread pool whose threads call ``harness.evaluate`` (each call one sandboxed worker)."""

    def __init__(self, device: str = "auto", parallel: int | None = None) -> None:
        self._gpus = visible_gpus(device)
        self._slots = parallel if parallel is not None and parallel > 0 else default_slots(self._gpus)
        self._pool = ThreadPoolExecutor(max_workers=self._slots, thread_name_prefix="kernelevolve-eval")
        self._cancel = threading.Event()

    @property
    def slots(self) -> int:
        return self._slots

    @property
    def gpus(self) -> list[int]:
        return list(self._gpus)

    def submit(self, problem: Path, source: str, config: EvalConfig, gpu: int | None) -> Future[EvalResult]:
        if gpu is not None:
            config = dataclasses.replace(config, gpu_index=gpu)
        return self._pool.submit(self._evaluate, problem, source, config)

    def _evaluate(self, problem: Path, source: str, config: EvalConfig) -> EvalResult:
        from kernelevolve.search.harness import evaluate

        return evaluate(problem, source, config, cancel=self._cancel)

    def close(self, cancel_running: bool = False) -> None:
        if cancel_running:
            self._cancel.set()
        self._pool.shutdown(wait=True, cancel_futures=cancel_running)
