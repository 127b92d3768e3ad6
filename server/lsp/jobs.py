"""Background searches: one asyncio task per job wrapping the blocking engine on our own thread.

``start_job`` returns at once. The engine's ``Search.run`` blocks on a ``search_pool`` thread; its
events (called on engine threads) are handed to the loop with ``call_soon_threadsafe`` and turned
into ``kernelEvolve/candidate`` notifications, progress, and inlay-hint refreshes there. Cancel
comes from the progress token, the ``kernelEvolve.cancel`` command, or shutdown.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelevolve.search import events as ev
from kernelevolve.search.engine import Search, SearchConfig, SearchOutcome
from kernelevolve.server.lsp.progress import JobProgress
from kernelevolve.server.lsp.protocol import (
    CANDIDATE_NOTIFICATION,
    RUN_FINISHED_NOTIFICATION,
    BestSoFar,
    candidate_payload,
    short_device,
)
from kernelevolve.server.lsp.server import EvolveServer
from lsprotocol import types

logger = logging.getLogger(__name__)
_DONE = object()


@dataclass
class Job:
    job_id: str
    uri: str
    op: str
    problem_path: Path
    config: SearchConfig
    token: str
    seed_path: Path | None = None  # a candidate file to start from (e.g. a hand-written kernel)
    search: Search | None = None
    cancel_requested: bool = False
    run_id: int | None = None
    evaluated: int = 0
    best: BestSoFar | None = None
    status: str = "starting"  # starting | running | finished | cancelled | failed
    reason: str = ""
    kernel_path: Path | None = None
    timing: str | None = None
    device: str | None = None
    task: asyncio.Task[Any] | None = None
    progress: JobProgress | None = None
    finished: asyncio.Event = field(default_factory=asyncio.Event)

    def cancel(self) -> None:
        self.cancel_requested = True
        search = self.search
        if search is not None:
            search.cancel()

    def summary(self) -> dict[str, Any]:
        return {
            "jobId": self.job_id,
            "uri": self.uri,
            "op": self.op,
            "problemPath": str(self.problem_path),
            "runId": self.run_id,
            "evaluated": self.evaluated,
            "bestSpeedup": self.best.speedup if self.best else None,
            "bestCandidateId": self.best.candidate_id if self.best else None,
            "timing": self.timing,
            "device": self.device,
            "status": self.status,
        }


class JobRegistry:
    def __init__(self) -> None:
        self.jobs: dict[str, Job] = {}

    def running_for(self, problem_path: Path) -> Job | None:
        return next(
            (j for j in self.jobs.values() if j.problem_path == problem_path and not j.finished.is_set()),
            None,
        )

    def active(self) -> list[Job]:
        return [j for j in self.jobs.values() if not j.finished.is_set()]

    def cancel(self, job_id: str | None = None, uri: str | None = None) -> list[str]:
        chosen = [
            j
            for j in self.active()
            if (job_id is None or j.job_id == job_id) and (uri is None or j.uri == uri)
        ]
        for job in chosen:
            job.cancel()
        return [j.job_id for j in chosen]


def registry(ls: EvolveServer) -> JobRegistry:
    if ls.jobs is None:
        ls.jobs = JobRegistry()
    jobs: JobRegistry = ls.jobs
    return jobs


def start_job(
    ls: EvolveServer, *, uri: str, op: str, problem_path: Path, seed_path: Path | None = None
) -> tuple[Job, bool]:
    """Start (or join) the search for ``problem_path``; returns the job and whether it joined."""
    jobs = registry(ls)
    existing = jobs.running_for(problem_path)
    if existing is not None:
        return existing, True
    job_id = uuid.uuid4().hex[:12]
    job = Job(
        job_id,
        uri,
        op,
        problem_path,
        ls.settings.search_config(),
        token=f"kernelevolve-{job_id}",
        seed_path=seed_path,
    )
    job.progress = JobProgress(ls, job.token, job_id, on_cancel=job.cancel)
    jobs.jobs[job_id] = job
    job.task = ls.spawn(_run(ls, job))
    return job, False


async def _run(ls: EvolveServer, job: Job) -> None:
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[Any] = asyncio.Queue()
    assert job.progress is not None
    await job.progress.begin(
        f"Evolving {job.op}", f"{job.config.strategy}, up to {job.config.max_steps} steps"
    )
    db_path = ls.db_path

    def post(event: Any) -> None:  # engine threads
        loop.call_soon_threadsafe(queue.put_nowait, event)

    def blocking() -> SearchOutcome | None:
        try:
            if job.cancel_requested:
                return None
            with Search(
                job.problem_path, job.config, db_path, on_event=post, seed_path=job.seed_path
            ) as search:
                job.search = search
                if job.cancel_requested:
                    search.cancel()
                return search.run()
        finally:
            post(_DONE)

    future = loop.run_in_executor(ls.search_pool, blocking)
    job.status = "running"
    try:
        while True:
            event = await queue.get()
            if event is _DONE:
                break
            _on_event(ls, job, event)
        outcome = await future
    except asyncio.CancelledError:  # shutdown: stop the engine, let its thread wind down
        job.cancel()
        job.status = "cancelled"
        job.progress.end("cancelled")
        job.finished.set()
        raise
    except Exception as exc:
        logger.exception("search failed")
        outcome = None
        job.status, job.reason = "failed", f"{type(exc).__name__}: {exc}"
        ls.show(f"kernelevolve: the search for {job.op} failed: {job.reason}", types.MessageType.Error)
    _finish(ls, job, outcome)


def _on_event(ls: EvolveServer, job: Job, event: Any) -> None:
    hardware = job.config.eval.hardware
    if isinstance(event, ev.RunStarted):
        job.run_id = event.run_id
        job.timing = event.timing_kind
        job.device = short_device(event.device, event.timing_kind, hardware)
        assert job.progress is not None
        job.progress.report(f"run {event.run_id}: {event.timing_kind} on {job.device}", 1)
    elif isinstance(event, ev.CandidateEvaluated):
        ls.history_generation += 1
        job.evaluated += 1
        job.timing = event.timing_kind or job.timing
        device = short_device(event.device, event.timing_kind, hardware)
        improved = False
        speedup, timing = event.speedup, event.timing_kind
        correct = event.verdict == "correct" and speedup is not None and timing is not None
        if (
            correct
            and speedup is not None
            and timing is not None
            and (job.best is None or speedup > job.best.speedup)
        ):
            job.best = BestSoFar(event.candidate_id, speedup, timing, device, event.run_id)
            improved = True
        payload = candidate_payload(
            uri=job.uri, job_id=job.job_id, event=event, device_label=device, best=job.best
        )
        ls.protocol.notify(CANDIDATE_NOTIFICATION, payload)
        _report(job)
        if improved:
            _publish_best(ls, job)
    elif isinstance(event, ev.NewBest):
        device = short_device(event.device, event.timing_kind, hardware)
        if job.best is None or job.best.candidate_id != event.candidate_id:
            job.best = BestSoFar(event.candidate_id, event.speedup, event.timing_kind, device, event.run_id)
            _publish_best(ls, job)
    elif isinstance(event, ev.Notice):
        level = {"error": types.MessageType.Error, "warning": types.MessageType.Warning}.get(
            event.level, types.MessageType.Info
        )
        ls.show(f"kernelevolve: {event.message}", level)
    elif isinstance(event, ev.RunFinished):
        job.status, job.reason = event.status, event.reason


def _report(job: Job) -> None:
    assert job.progress is not None
    percentage = min(99, int(100 * job.evaluated / max(1, job.config.max_steps)))
    best = f", best {job.best.short()}" if job.best else ", no correct candidate yet"
    job.progress.report(f"{job.evaluated}/{job.config.max_steps} evaluated{best}", percentage)


def _publish_best(ls: EvolveServer, job: Job) -> None:
    if job.best is not None:
        ls.best[str(job.problem_path.resolve())] = job.best
        ls.refresh_hints()


def _finish(ls: EvolveServer, job: Job, outcome: SearchOutcome | None) -> None:
    ls.history_generation += 1
    if outcome is not None:
        job.run_id = outcome.run_id
        job.status, job.reason = outcome.status, outcome.reason
        job.kernel_path = outcome.best_path
        job.timing = outcome.best_timing_kind or job.timing
    elif job.status in ("starting", "running"):
        job.status, job.reason = "cancelled", "cancelled before the search started"
    best = job.best
    message = f"{job.status}: {job.evaluated} evaluated" + (f", best {best.short()}" if best else "")
    assert job.progress is not None
    job.progress.end(message)
    ls.protocol.notify(
        RUN_FINISHED_NOTIFICATION,
        {
            "uri": job.uri,
            "jobId": job.job_id,
            "runId": job.run_id,
            "status": job.status,
            "reason": job.reason,
            "evaluated": job.evaluated,
            "bestCandidateId": best.candidate_id if best else None,
            "bestSpeedup": best.speedup if best else None,
            "timing": best.timing if best else job.timing,
            "device": best.device if best else job.device,
            "kernelPath": str(job.kernel_path) if job.kernel_path else None,
        },
    )
    if job.kernel_path is not None and ls.watcher is not None:
        ls.watcher.track(job.kernel_path, job.problem_path, best)
    job.finished.set()


async def cancel_all(ls: EvolveServer, timeout_s: float = 20.0) -> None:
    """Shutdown: cancel every job and wait (bounded) for their engine threads to stop."""
    jobs = registry(ls)
    active = jobs.active()
    for job in active:
        job.cancel()
    waits = [job.finished.wait() for job in active]
    if waits:
        try:
            await asyncio.wait_for(asyncio.gather(*waits), timeout_s)
        except asyncio.TimeoutError:
            for job in active:
                if job.task is not None:
                    job.task.cancel()
