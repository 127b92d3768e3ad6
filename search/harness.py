"""Public entry points of the evaluation harness.

``evaluate`` runs one candidate against one problem in a sandboxed worker process and returns an
``EvalResult``; it never raises for anything the candidate does. ``describe_problem`` imports a
problem in a worker and reports its inputs and ops.

Stages, cheapest first: LOAD (file checks, here) -> STATIC (AST anti-cheat, here) -> one fresh
worker (``kernelevolve.search.worker``) for COMPILE -> CORRECTNESS -> GHOST -> TIMING. A worker
that crashes, hangs or exceeds a limit becomes a SANDBOX rejection naming the stage it died in.
Bad *problem* input, or a candidate file without ``ModelNew`` or with a syntax error, raises
``ProblemError``. See docs/harness.md.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
from kernelevolve.search.config import EvalConfig
from kernelevolve.search.gpu_lock import gpu_lock_path
from kernelevolve.search.problem import (
    ProblemError,
    ProblemSpec,
    TensorSpec,
    check_candidate_source,
    load_problem_file,
    source_hash,
)
from kernelevolve.search.results import EvalResult, Stage, Verdict
from kernelevolve.search.sandbox import SandboxOutcome, run_sandboxed, scrubbed_env

StageCallback = Callable[[Stage], None]
SIGNAL_WORDS = {
    "SIGSEGV": "segfault (SIGSEGV)",
    "SIGBUS": "bus error (SIGBUS)",
    "SIGFPE": "arithmetic fault (SIGFPE)",
    "SIGILL": "illegal instruction (SIGILL)",
    "SIGABRT": "aborted (SIGABRT)",
    "SIGKILL": "killed by SIGKILL (out of memory?)",
}


def evaluate(
    problem: Path,
    candidate_source: str,
    config: EvalConfig | None = None,
    *,
    candidate_name: str = "candidate.py",
    cancel: threading.Event | None = None,
    on_stage: StageCallback | None = None,
) -> EvalResult:
    """Evaluate one candidate; ``on_stage`` is called (from this thread) as the worker enters each stage."""
    config = config or EvalConfig()
    start = time.monotonic()
    problem = Path(problem)
    load_problem_file(problem)
    check_candidate_source(candidate_source, candidate_name)
    digest = source_hash(candidate_source)

    def done(result: EvalResult) -> EvalResult:
        result.source_hash = digest
        result.duration_s = time.monotonic() - start
        return result

    warnings: list[str] = []
    if config.static_checks:
        if on_stage:
            on_stage(Stage.STATIC)
        rejection = _static_rejection(candidate_source, candidate_name)
        if rejection:
            return done(EvalResult(Verdict.REJECTED, Stage.STATIC, rejection, warnings=warnings))

    run = _run_worker("evaluate", problem, config, cancel, on_stage, candidate_source, candidate_name)
    payload = run.payload
    if payload is not None and "problem_error" in payload:
        raise ProblemError(payload["problem_error"])
    if payload is not None and "result" in payload:
        result = EvalResult.from_dict(payload["result"])
    elif payload is not None and "env_error" in payload:
        result = EvalResult(Verdict.REJECTED, Stage.SANDBOX, payload["env_error"])
    elif payload is not None and "internal_error" in payload:
        result = EvalResult(Verdict.REJECTED, Stage.SANDBOX, "harness error in the worker (see log_tail)")
        run.outcome.stderr_tail += "\n" + payload["internal_error"]
    elif run.forged:
        reason = f"a result file not written by the worker was found (forged?); {crash_reason(run.outcome, run.last_stage)}"
        result = EvalResult(Verdict.REJECTED, Stage.SANDBOX, reason)
    else:
        result = EvalResult(Verdict.REJECTED, Stage.SANDBOX, crash_reason(run.outcome, run.last_stage))
    result.warnings = warnings + result.warnings
    result.log_tail = run.outcome.log_tail
    if run.outcome.leftover_pids:
        result.warnings.append(f"processes survived the kill: {run.outcome.leftover_pids}")
    return done(result)


def describe_problem(problem: Path, config: EvalConfig | None = None) -> ProblemSpec:
    """Import the problem in a sandboxed worker; report its inputs, init inputs and ATen ops."""
    config = config or EvalConfig()
    problem = Path(problem)
    source = load_problem_file(problem)
    key = (source_hash(source), config.device, config.gpu_index)
    cached = _DESCRIBED.get(key)
    if cached is None:
        run = _run_worker("describe", problem, config, None, None)
        payload = run.payload or {}
        if "problem_error" in payload:
            raise ProblemError(payload["problem_error"])
        if "spec" not in payload:
            detail = payload.get("env_error") or crash_reason(run.outcome, run.last_stage)
            raise ProblemError(f"{problem}: the problem could not be run: {detail}")
        cached = _DESCRIBED[key] = payload["spec"]
    inputs: list[TensorSpec | str] = [
        TensorSpec(tuple(v["shape"]), v["dtype"]) if isinstance(v, dict) else str(v) for v in cached["inputs"]
    ]
    return ProblemSpec(
        path=problem,
        name=problem.parent.name if problem.stem == "problem" else problem.stem,
        source=source,
        source_hash=key[0],
        inputs=inputs,
        init_inputs=list(cached["init_inputs"]),
        has_test_inputs=bool(cached["has_test_inputs"]),
        has_benchmark_inputs=bool(cached["has_benchmark_inputs"]),
        ops=list(cached["ops"]),
        device=str(cached["device"]),
    )


_DESCRIBED: dict[tuple[str, str, int | None], dict[str, Any]] = {}


def _static_rejection(source: str, filename: str) -> str | None:
    from kernelevolve.search.static_check import check, format_violations

    violations = check(source, filename)
    return format_violations(violations) if violations else None


def crash_reason(outcome: SandboxOutcome, stage: str | None) -> str:
    """One line for a worker that ended without an answer."""
    during = f" during {stage}" if stage else " during startup"
    if outcome.killed == "cancelled":
        return f"cancelled{during}"
    if outcome.killed:
        return f"killed: {outcome.killed}{during}"
    name = outcome.signal_name
    if name:
        return f"{SIGNAL_WORDS.get(name, f'killed by {name}')}{during}"
    if outcome.returncode:
        return f"exited with code {outcome.returncode} without a result (os._exit or a fatal error){during}"
    return f"exited without writing a result{during}"


@dataclass
class _WorkerRun:
    payload: dict[str, Any] | None
    outcome: SandboxOutcome
    last_stage: str | None
    forged: bool = False  # a result file without the worker's nonce was found (and ignored)


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "kernelevolve"


def visible_device(config: EvalConfig) -> str:
    """The CUDA_VISIBLE_DEVICES entry (index or UUID) of the GPU the worker will use as cuda:0."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    ids = [v.strip() for v in visible.split(",") if v.strip()] if visible else []
    index = config.gpu_index or 0
    return ids[index] if index < len(ids) else str(index)


def gpu_locks_dir() -> Path:
    """Shared by every kernelevolve process on the machine, whatever its cache directory."""
    return Path(tempfile.gettempdir()) / "kernelevolve-gpu-locks"


def worker_env(config: EvalConfig, root: Path) -> dict[str, str]:
    cache = Path(config.cache_dir) if config.cache_dir else default_cache_dir()
    threads = str(max(1, min(8, os.cpu_count() or 1)))
    extra = {
        "HOME": str(root / "home"),
        "TMPDIR": str(root / "tmp"),
        "PYTHONUNBUFFERED": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "OMP_NUM_THREADS": threads,
        "MKL_NUM_THREADS": threads,
        "TRITON_HOME": str(root / "home"),
        "TRITON_CACHE_DIR": str(cache / "triton"),
        "TORCHINDUCTOR_CACHE_DIR": str(cache / "inductor"),
        "TORCHINDUCTOR_COMPILE_THREADS": "1",
    }
    if config.gpu_index is not None:
        extra["CUDA_VISIBLE_DEVICES"] = visible_device(config)
    if config.device == "cpu":
        extra["CUDA_VISIBLE_DEVICES"] = ""
    return scrubbed_env(os.environ, extra)


def _run_worker(
    mode: str,
    problem: Path,
    config: EvalConfig,
    cancel: threading.Event | None,
    on_stage: StageCallback | None,
    candidate_source: str | None = None,
    candidate_name: str = "candidate.py",
) -> _WorkerRun:
    root = _new_job_root()
    try:
        job_dir, cwd = root / "job", root / "cwd"
        for d in (job_dir, cwd, root / "home", root / "tmp"):
            d.mkdir()
        nonce = secrets.token_hex(16)
        job: dict[str, Any] = {
            "mode": mode,
            "problem_path": str(problem.resolve()),
            "config": config.to_dict(),
            "nonce": nonce,
            "parent_pid": os.getpid(),
        }
        if config.device != "cpu":
            job["gpu_lock"] = str(gpu_lock_path(gpu_locks_dir(), visible_device(config)))
        if candidate_source is not None:
            name = Path(candidate_name).name or "candidate.py"
            candidate_path = job_dir / (name if name.endswith(".py") else name + ".py")
            candidate_path.write_text(candidate_source, encoding="utf-8")
            job["candidate_path"] = str(candidate_path)
        (job_dir / "job.json").write_text(json.dumps(job))
        progress = _ProgressReader(job_dir / "progress.jsonl", on_stage)
        outcome = run_sandboxed(
            [sys.executable, "-X", "faulthandler", "-m", "kernelevolve.search.worker", str(job_dir)],
            cwd=cwd,
            log_dir=root,
            env=worker_env(config, root),
            limits=config.limits,
            cancel=cancel,
            on_poll=progress.poll,
        )
        progress.poll()
        payload = None
        result_path = job_dir / "result.json"
        if result_path.exists():
            try:
                payload = json.loads(result_path.read_text())
            except (OSError, ValueError):
                payload = None
        forged = payload is not None and (not isinstance(payload, dict) or payload.get("nonce") != nonce)
        return _WorkerRun(None if forged else payload, outcome, progress.last, forged)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def jobs_dir() -> Path:
    return Path(tempfile.gettempdir()) / "kernelevolve-jobs"


def _new_job_root() -> Path:
    """A fresh job directory, tagged with its owner so a later caller can remove it if we are killed."""
    base = jobs_dir()
    base.mkdir(mode=0o700, exist_ok=True)
    global _swept
    if not _swept:
        _swept = True
        sweep_orphans(base)
    root = Path(tempfile.mkdtemp(prefix="kernelevolve-", dir=base))
    (root / "owner").write_text(f"{os.getpid()} {psutil.Process().create_time()}")
    return root


_swept = False
ORPHAN_UNTAGGED_S = 3600.0


def sweep_orphans(base: Path) -> list[Path]:
    """Remove job directories whose owning caller no longer exists (it was killed mid-evaluation).

    A directory without a readable owner is only removed once it is an hour old: its owner may be
    between creating it and tagging it.
    """
    removed = []
    for root in base.glob("kernelevolve-*"):
        try:
            pid_text, created = (root / "owner").read_text().split()
        except (OSError, ValueError):
            try:
                stale = time.time() - root.stat().st_mtime > ORPHAN_UNTAGGED_S
            except OSError:
                continue
            if stale:
                shutil.rmtree(root, ignore_errors=True)
                removed.append(root)
            continue
        try:
            alive = abs(psutil.Process(int(pid_text)).create_time() - float(created)) < 1e-3
        except (ValueError, psutil.Error):
            alive = False
        if not alive:
            shutil.rmtree(root, ignore_errors=True)
            removed.append(root)
    return removed


class _ProgressReader:
    """Follows the worker's stage markers; calls back on each new stage."""

    def __init__(self, path: Path, on_stage: StageCallback | None) -> None:
        self.path = path
        self.on_stage = on_stage
        self.offset = 0
        self.last: str | None = None

    def poll(self) -> None:
        try:
            with self.path.open() as fh:
                fh.seek(self.offset)
                chunk = fh.read()
        except OSError:
            return
        complete = chunk[: chunk.rfind("\n") + 1]
        self.offset += len(complete.encode())
        for line in complete.splitlines():
            try:
                stage = str(json.loads(line)["stage"])
            except (ValueError, KeyError, TypeError):
                continue
            self.last = stage
            if self.on_stage and stage in Stage._value2member_map_:
                self.on_stage(Stage(stage))
