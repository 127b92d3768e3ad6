"""The tree search: (fitness, selection policy, operators, termination) over kernel candidates.

Contract shared by the CLI (`kernelevolve evolve`) and the language server. Nothing here
imports pygls. ``Search.run`` blocks; callers that must not block run it on a thread of their
own and call ``cancel`` from anywhere. ``on_event`` is called on the thread running ``run``.

Every proposal is committed to history as a 'pending' candidate before it is evaluated and its
evaluation is committed as soon as it arrives, so ``resume_run`` rebuilds the tree from history,
evaluates the still-pending rows once, and continues with what is left of the budget.
"""

from __future__ import annotations

import threading
import time
import traceback
from collections import deque
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import IO, Literal

from kernelevolve.search.backend import EvalBackend, LocalProcessBackend
from kernelevolve.search.config import EvalConfig
from kernelevolve.search.events import (
    CandidateEvaluated,
    CandidateProposed,
    Event,
    EventSink,
    NewBest,
    Notice,
    RunFinished,
    RunStarted,
    event_kind,
    to_dict,
)
from kernelevolve.search.fitness import fitness, kind_mismatch, significantly_better
from kernelevolve.search.history import CandidateRecord, History
from kernelevolve.search.operators.base import (
    NodeContext,
    NodeView,
    Operator,
    OperatorUnavailable,
    Proposal,
    StopSearch,
)
from kernelevolve.search.operators.registry import build_operators, parse_not_covered
from kernelevolve.search.policies import SearchTree, make_policy
from kernelevolve.search.problem import (
    ProblemError,
    ProblemSpec,
    load_candidate_file,
    load_problem_file,
    source_hash,
)
from kernelevolve.search.results import EvalResult, Stage, TimingKind, Verdict
from kernelevolve.search.termination import Termination

Strategy = Literal["greedy", "beam", "mcts", "evolve"]
MAX_FAILURE_MEMORY = 24


class SearchError(ProblemError):
    """The search cannot start (unknown run to resume, run of another problem, bad seed file)."""


@dataclass(frozen=True)
class SearchConfig:
    strategy: Strategy = "greedy"
    max_steps: int = 24  # evaluated candidates, draft phase included
    time_budget_s: float | None = None
    patience: int | None = 8  # stop after this many evaluations without a new best
    target_speedup: float | None = None
    draft_size: int = 4  # independent proposals from the spec before expansion
    parallel: int | None = None  # candidates in flight; None: bounded by GPUs and cores
    eval: EvalConfig = field(default_factory=EvalConfig)
    llm: bool = False  # use the LLM operator (needs an API key)
    llm_model: str | None = None
    llm_budget_usd: float | None = None
    warm_start: bool = True


@dataclass
class SearchOutcome:
    run_id: int
    status: str  # "finished", "cancelled", "failed"
    reason: str
    evaluated: int
    best_candidate_id: int | None
    best_speedup: float | None
    best_timing_kind: str | None
    best_path: Path | None  # written kernel file, when a correct candidate was found
    dispatch_path: Path | None = None
    test_path: Path | None = None
    device: str | None = None
    not_covered: list[str] = field(default_factory=list)  # ATen ops outside the template library
    evaluated_this_session: int = 0
    wall_s: float = 0.0
    gpus: int = 0
    throughput: float | None = None  # evaluations per GPU-minute on CUDA, per minute on the CPU
    throughput_unit: str = "per minute"


@dataclass
class _Node:
    id: int
    parent: int | None
    source: str
    operator: str
    note: str
    result: EvalResult | None = None
    fitness: float = 0.0


def _iso_seconds(stamp: str | None) -> float | None:
    if not stamp:
        return None
    try:
        return datetime.fromisoformat(stamp).timestamp()
    except ValueError:
        return None


class Search:
    def __init__(
        self,
        problem: Path,
        config: SearchConfig,
        db_path: Path,
        *,
        on_event: EventSink | None = None,
        resume_run: int | None = None,
        out_path: Path | None = None,
        seed_path: Path | None = None,
        backend: EvalBackend | None = None,
        export: bool = True,
    ) -> None:
        """Check the files, describe the problem (one sandboxed worker) and open or create the run.

        Raises ``ProblemError`` (``SearchError`` for resume/seed problems) with one line.
        """
        self.problem = Path(problem)
        self.problem_source = load_problem_file(self.problem)
        self.seed_source = load_candidate_file(Path(seed_path)) if seed_path is not None else None
        self.seed_path = seed_path
        self.config = config
        self.out_path = out_path
        self.export = export
        self._on_event = on_event
        self._backend = backend
        self._cancel = threading.Event()
        self._policy = make_policy(config.strategy)
        self.history = History(db_path)
        self.nodes: dict[int, _Node] = {}
        self.tree = SearchTree()
        self.known: set[str] = set()
        self.failures: deque[str] = deque(maxlen=MAX_FAILURE_MEMORY)
        self.best_id: int | None = None
        self.run_kind: TimingKind | None = None
        self.not_covered: list[str] = []
        self.device: str | None = None
        self.resumed = resume_run is not None
        self._pending: deque[int] = deque()
        self._warm_start_from: int | None = None
        self._forced_stop: str | None = None  # an operator asked to end the run (e.g. LLM budget spent)
        from kernelevolve.search.harness import describe_problem

        if resume_run is not None:
            run = self.history.get_run(resume_run)
            if run is None or run.kind != "evolve":
                raise SearchError(f"no evolve run {resume_run} in {db_path}")
            if Path(run.problem_path).resolve() != self.problem.resolve():
                raise SearchError(f"run {resume_run} evolved {run.problem_path}, not {self.problem}")
            if run.problem_hash != source_hash(self.problem_source):
                raise SearchError(f"{self.problem} changed since run {resume_run}: start a new run instead")
        self.spec: ProblemSpec = describe_problem(self.problem, config.eval)
        expected = TimingKind.MEASURED if self.spec.device.startswith("cuda") else TimingKind.MODELLED
        self._lock_file: IO[bytes] | None = None
        if resume_run is not None:
            self._run_id = resume_run
            self._lock_run(Path(db_path))
        else:
            self._run_id = self.history.create_run(
                kind="evolve",
                problem_path=str(self.problem),
                problem_hash=source_hash(self.problem_source),
                signature=self.spec.signature,
                strategy=config.strategy,
                config=asdict(config),
                device=self.spec.device,
                timing_kind=expected.value,
            )
            self._lock_run(Path(db_path))
        self.termination = Termination(
            max_steps=config.max_steps,
            time_budget_s=config.time_budget_s,
            patience=config.patience,
            target_speedup=config.target_speedup,
            cancel_event=self._cancel,
        )

    def _lock_run(self, db_path: Path) -> None:
        """Hold an exclusive lock on the run while this object lives, so two processes never
        evaluate the same run (a resume while the original still runs). The OS drops the lock when
        a process dies, SIGKILL included."""
        try:
            import fcntl
        except ImportError:  # not POSIX: no cross-process guard
            return
        path = db_path.parent / f".run-{self._run_id}.lock"
        handle = open(path, "ab")  # noqa: SIM115 (held open until close())
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            self.history.close()
            raise SearchError(f"run {self._run_id} is being evolved by another process") from None
        self._lock_file = handle

    @property
    def run_id(self) -> int:
        return self._run_id

    def cancel(self) -> None:
        """Stop proposing, kill in-flight evaluations, finish as 'cancelled'. Any thread."""
        self._cancel.set()

    # -- events ---------------------------------------------------------------------------------

    def _emit(self, event: Event) -> None:
        self.history.add_event(self._run_id, event_kind(event), to_dict(event))
        if self._on_event is not None:
            self._on_event(event)

    def _notice(self, level: str, message: str) -> None:
        self._emit(Notice(self._run_id, level, message))

    # -- the run --------------------------------------------------------------------------------

    def run(self) -> SearchOutcome:
        started = time.monotonic()
        before = self.termination.evaluated
        backend = self._backend or LocalProcessBackend(self.config.eval.device, self.config.parallel)
        try:
            status, reason = self._run(backend)
        except Exception as exc:  # an engine or history fault: record it, never lose the run
            status, reason = "failed", f"{type(exc).__name__}: {exc}"
            self._notice("error", "".join(traceback.format_exception(exc))[-2000:])
        finally:
            if self._backend is None:
                backend.close(cancel_running=True)
        return self._finish(status, reason, backend, started, before)

    def _run(self, backend: EvalBackend) -> tuple[str, str]:
        ops = build_operators(self.config, self.history, self._run_id)
        self.not_covered = list(ops.not_covered)
        self.drafters: list[Operator] = list(ops.drafters)
        self.refiners: list[Operator] = list(ops.refiners)
        drafts: list[Proposal] = []
        if self.resumed:
            self._reload()
        if not self.nodes:  # a new run, or one killed before its first proposal was committed
            drafts = self._draft_sources()
        self._emit(
            RunStarted(
                run_id=self._run_id,
                problem=str(self.problem),
                strategy=self.config.strategy,
                timing_kind=(self.run_kind or self._expected_kind()).value,
                device=self.spec.device,
                resumed=self.resumed,
                warm_start_candidate_id=self._warm_start_from,
            )
        )
        for level, message in ops.notices:
            self._notice(level, message)
        drafting = not self.nodes
        for proposal in drafts:
            self._add(proposal, None)
        if drafting:
            self._draft_from_operators()
        gpus = backend.gpus
        slots = backend.slots  # several per GPU: the harness's GPU lock keeps timed regions exclusive
        gpu_load = {g: 0 for g in gpus}
        inflight: dict[Future[EvalResult], tuple[int, int | None]] = {}
        stop_reason: str | None = None
        while True:
            if stop_reason is None:
                stop_reason = self._forced_stop or self.termination.reason()
            if self._cancel.is_set() or self._out_of_time(stop_reason):
                break
            while (
                stop_reason is None and len(inflight) < slots and self.termination.steps_left(len(inflight))
            ):
                candidate_id = self._next_candidate(slots - len(inflight))
                if candidate_id is None:
                    break
                gpu = min(gpu_load, key=lambda g: (gpu_load[g], g)) if gpu_load else None
                if gpu is not None:
                    gpu_load[gpu] += 1
                future = backend.submit(self.problem, self.nodes[candidate_id].source, self.config.eval, gpu)
                inflight[future] = (candidate_id, gpu)
            if not inflight:
                if stop_reason is None:
                    stop_reason = self._idle_reason()
                break
            done, _ = wait(list(inflight), timeout=0.25, return_when=FIRST_COMPLETED)
            for future in done:
                candidate_id, gpu = inflight.pop(future)
                if gpu is not None:
                    gpu_load[gpu] -= 1
                if self._cancel.is_set():
                    break  # a killed worker's result is not an evaluation: the row stays pending
                self._record(candidate_id, self._result_of(future))
        if inflight:  # cancelled or out of time mid-evaluation: those rows stay pending
            backend.close(cancel_running=True)
        if self._cancel.is_set():
            return "cancelled", "cancelled"
        return "finished", stop_reason or "finished"

    @staticmethod
    def _result_of(future: Future[EvalResult]) -> EvalResult:
        """The evaluation; a harness fault (not the candidate's) becomes a sandbox rejection."""
        try:
            return future.result()
        except Exception as exc:
            return EvalResult(
                Verdict.REJECTED, Stage.SANDBOX, reason=f"harness error: {type(exc).__name__}: {exc}"
            )

    def _out_of_time(self, stop_reason: str | None) -> bool:
        return stop_reason is not None and stop_reason.startswith("time budget")

    def _expected_kind(self) -> TimingKind:
        return TimingKind.MEASURED if self.spec.device.startswith("cuda") else TimingKind.MODELLED

    def _idle_reason(self) -> str:
        if not self.nodes:
            why = "no operator proposed a candidate"
            if self.not_covered:
                why = f"not covered by the offline operators: {', '.join(self.not_covered)}"
            return f"no operator could make a first candidate ({why}); give one with --seed FILE or use --llm"
        return "search space exhausted: the operators have nothing new to propose"

    # -- proposals --------------------------------------------------------------------------------

    def _add(self, proposal: Proposal, parent: int | None) -> int | None:
        digest = source_hash(proposal.source)
        if digest in self.known:
            return None
        self.known.add(digest)
        candidate_id = self.history.add_candidate(
            run_id=self._run_id,
            parent_id=parent,
            operator=proposal.operator,
            source=proposal.source,
            note=proposal.note,
            step=self.termination.evaluated,
        )
        self.nodes[candidate_id] = _Node(
            candidate_id, parent, proposal.source, proposal.operator, proposal.note
        )
        self.tree.add(candidate_id, parent)
        self._pending.append(candidate_id)
        self._emit(CandidateProposed(self._run_id, parent, proposal.operator, proposal.note, candidate_id))
        return candidate_id

    def _draft_sources(self) -> list[Proposal]:
        """The user's seed and the warm-start kernel; both come before the operators' drafts."""
        drafts: list[Proposal] = []
        if self.seed_source is not None:
            drafts.append(Proposal(self.seed_source, "seed", f"seed file {self.seed_path}"))
        if not self.config.warm_start:
            return drafts
        prior = self.history.best_for_signature(self.spec.signature, self._expected_kind().value)
        if prior is not None and prior.run_id != self._run_id and prior.source != self.seed_source:
            note = f"best prior kernel: run {prior.run_id}, candidate {prior.id}"
            if prior.speedup is not None:
                note += f" ({prior.speedup:.2f}x {prior.timing_kind})"
            drafts.append(Proposal(prior.source, "warm-start", note))
            self._warm_start_from = prior.id
        return drafts

    def _draft_from_operators(self) -> None:
        for op in list(self.drafters):
            wanted = min(self.config.draft_size, self.config.max_steps) - len(self.tree.roots())
            if wanted <= 0:
                return
            for proposal in self._call(op, self._context(None), wanted):
                self._add(proposal, None)

    def _call(self, op: Operator, ctx: NodeContext, n: int) -> list[Proposal]:
        try:
            return op.propose(ctx, n, self._cancel)
        except StopSearch as exc:  # e.g. the LLM budget is spent: end the run with that reason
            self._forced_stop = str(exc) or f"operator {op.name} stopped the search"
            self._notice("warning", self._forced_stop)
        except OperatorUnavailable as exc:
            for lst in (self.drafters, self.refiners):
                if op in lst:
                    lst.remove(op)
            self.not_covered = sorted(set(self.not_covered) | set(parse_not_covered(str(exc))))
            self._notice("warning", str(exc))
        except Exception as exc:
            self._notice("warning", f"operator {op.name} failed: {type(exc).__name__}: {exc}")
        return []

    def _next_candidate(self, free: int) -> int | None:
        """A pending candidate to submit: re-queued or drafted first, else new children of the
        nodes the policy selects (one expansion per free slot)."""
        while not self._pending:
            if self._cancel.is_set() or self._forced_stop is not None:
                return None
            picks = self._policy.select(self.tree, max(1, free))
            if not picks:
                return None
            for parent in picks:
                self._expand(parent)
        return self._pending.popleft()

    def _expand(self, parent: int) -> int | None:
        node = self.tree.nodes[parent]
        refiners = list(self.refiners)
        if not refiners:
            self.tree.mark_exhausted(parent)
            return None
        turn = len(node.children) % len(refiners)
        for op in refiners[turn:] + refiners[:turn]:
            if self._cancel.is_set():
                return None
            for proposal in self._call(op, self._context(parent), 1):
                candidate_id = self._add(proposal, parent)
                if candidate_id is not None:
                    return candidate_id
        self.tree.mark_exhausted(parent)
        return None

    def _view(self, node_id: int) -> NodeView:
        n = self.nodes[node_id]
        return NodeView(n.id, n.source, n.operator, n.result, n.fitness)

    def _context(self, parent: int | None) -> NodeContext:
        siblings = []
        if parent is not None:
            siblings = [self._view(c) for c in self.tree.nodes[parent].children]
        return NodeContext(
            spec=self.spec,
            parent=self._view(parent) if parent is not None else None,
            siblings=siblings,
            best=self._view(self.best_id) if self.best_id is not None else None,
            failures=list(self.failures),
            run_id=self._run_id,
            step=self.termination.evaluated,
            known_hashes=frozenset(self.known),
        )

    # -- results ----------------------------------------------------------------------------------

    def _score(self, result: EvalResult) -> float:
        if self.run_kind is None and result.correct and result.timing_kind is not None:
            self.run_kind = result.timing_kind
        warning = kind_mismatch(result, self.run_kind)
        if warning is not None:
            self._notice("warning", warning)
        return fitness(result, self.run_kind)

    def _improves(self, node: _Node) -> bool:
        result = node.result
        if result is None or not result.correct:
            return False
        if self.best_id is None:
            return True
        incumbent = self.nodes[self.best_id].result
        return node.fitness > self.nodes[self.best_id].fitness and significantly_better(result, incumbent)

    def _remember_failure(self, node: _Node) -> None:
        result = node.result
        if result is None or result.correct:
            return
        what = node.note or node.operator
        self.failures.append(f"{what}: rejected at {result.stage.value}: {(result.reason or '')[:240]}")

    def _record(self, candidate_id: int, result: EvalResult) -> None:
        node = self.nodes[candidate_id]
        node.result = result
        node.fitness = self._score(result)
        self.history.record_evaluation(candidate_id, result, node.fitness)
        self.tree.set_fitness(candidate_id, node.fitness)
        improved = self._improves(node)
        self.termination.record(node.fitness, improved)
        self._remember_failure(node)
        if result.fingerprint is not None:
            self.device = result.fingerprint.device
        record = self.history.get_candidate(candidate_id)
        self._emit(
            CandidateEvaluated(
                run_id=self._run_id,
                candidate_id=candidate_id,
                parent_id=node.parent,
                operator=node.operator,
                verdict=result.verdict.value,
                stage=result.stage.value,
                reason=result.reason,
                speedup=result.speedup if result.correct else None,
                fitness=node.fitness,
                timing_kind=result.timing_kind.value if result.timing_kind else None,
                device=self.device or self.spec.device,
                diff=record.diff if record is not None else "",
                step=self.termination.evaluated,
            )
        )
        if improved:
            self.best_id = candidate_id
            self._emit(
                NewBest(
                    run_id=self._run_id,
                    candidate_id=candidate_id,
                    speedup=result.speedup or 0.0,
                    fitness=node.fitness,
                    timing_kind=result.timing_kind.value if result.timing_kind else "untimed",
                    device=self.device or self.spec.device,
                )
            )

    def _reload(self) -> None:
        """Rebuild the tree, the best and the termination counters from history."""
        run = self.history.get_run(self._run_id)
        assert run is not None
        records = self.history.list_candidates(self._run_id)
        if run.timing_kind and any(r.status == "evaluated" and r.timing_kind for r in records):
            self.run_kind = TimingKind(run.timing_kind)
        for rec in records:
            self.known.add(rec.source_hash)
            self.nodes[rec.id] = _Node(rec.id, rec.parent_id, rec.source, rec.operator, rec.note)
            self.tree.add(rec.id, rec.parent_id)
        evaluated = sorted((r for r in records if r.status == "evaluated"), key=self._evaluation_order)
        for rec in evaluated:
            node = self.nodes[rec.id]
            node.result = rec.result
            if node.result is None:
                continue
            node.fitness = self._score(node.result) if rec.fitness is None else rec.fitness
            self.tree.set_fitness(rec.id, node.fitness)
            improved = self._improves(node)
            self.termination.record(node.fitness, improved)
            if improved:
                self.best_id = rec.id
            self._remember_failure(node)
            if node.result.fingerprint is not None:
                self.device = node.result.fingerprint.device
        self._pending.extend(r.id for r in records if r.status == "pending")
        start = _iso_seconds(run.created_at)
        last = max((s for s in (_iso_seconds(r.evaluated_at) for r in evaluated) if s), default=None)
        if start is not None and last is not None:
            self.termination.elapsed_before_s = max(0.0, last - start)
        self._notice(
            "info",
            f"resumed run {self._run_id}: {len(evaluated)} evaluated, {len(self._pending)} pending re-queued",
        )

    @staticmethod
    def _evaluation_order(rec: CandidateRecord) -> tuple[str, int]:
        return (rec.evaluated_at or "", rec.id)

    # -- finish -----------------------------------------------------------------------------------

    def _finish(
        self, status: str, reason: str, backend: EvalBackend, started: float, before: int
    ) -> SearchOutcome:
        wall = time.monotonic() - started
        session = self.termination.evaluated - before
        best = self.nodes.get(self.best_id) if self.best_id is not None else None
        outcome = SearchOutcome(
            run_id=self._run_id,
            status=status,
            reason=reason,
            evaluated=self.termination.evaluated,
            best_candidate_id=self.best_id,
            best_speedup=best.result.speedup if best and best.result else None,
            best_timing_kind=best.result.timing_kind.value
            if best and best.result and best.result.timing_kind
            else None,
            best_path=None,
            device=self.device or self.spec.device,
            not_covered=list(self.not_covered),
            evaluated_this_session=session,
            wall_s=wall,
            gpus=len(backend.gpus),
        )
        minutes = wall / 60.0
        if minutes > 0:
            if backend.gpus:
                outcome.throughput = session / (minutes * len(backend.gpus))
                outcome.throughput_unit = "per GPU-minute"
            else:
                outcome.throughput = session / minutes
        if best is not None and self.export and status != "failed":
            try:
                from kernelevolve.search.export import write_outcome_files

                paths = write_outcome_files(self.history, self.problem, best.id, self.out_path)
                outcome.best_path, outcome.dispatch_path, outcome.test_path = paths
            except OSError as exc:
                self._notice("error", f"could not write the best kernel: {exc}")
        elif best is None and not reason.startswith("no operator"):
            reason = f"{reason}; no correct candidate found"
            outcome.reason = reason
        self.history.finish_run(
            self._run_id,
            status=status,
            reason=reason,
            best_candidate_id=self.best_id,
            device=self.device,
            timing_kind=self.run_kind.value if self.run_kind else None,
        )
        if best is not None and status != "failed":
            self._learn(best.id)
        self._emit(
            RunFinished(
                run_id=self._run_id,
                status=status,
                reason=reason,
                evaluated=self.termination.evaluated,
                best_candidate_id=self.best_id,
                best_speedup=outcome.best_speedup,
            )
        )
        return outcome

    def _learn(self, candidate_id: int) -> None:
        """A measured win becomes a knowledge entry that later searches retrieve (knowledge/learning.py);
        modelled or slower results are left alone."""
        try:
            from kernelevolve.knowledge.learning import distil

            entry = distil(self.history, candidate_id)
        except Exception as exc:  # learning is a bonus: never fail a finished run over it
            self._notice("warning", f"could not distil candidate {candidate_id} into knowledge: {exc}")
            return
        if entry is not None:
            self._notice("info", f"learned: candidate {candidate_id} is now knowledge entry learned/{entry}")

    def close(self) -> None:
        """Close the history connection and release the run; call after ``run`` (or use ``with``)."""
        self.history.close()
        if self._lock_file is not None:
            self._lock_file.close()
            self._lock_file = None

    def __enter__(self) -> Search:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
