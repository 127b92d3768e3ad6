"""Inside the worker: COMPILE -> CORRECTNESS -> GHOST -> TIMING for one candidate.

Every candidate call goes through ``CandidateRunner.call``: fresh copies of the inputs, a poisoned
allocator, and afterwards the tamper checks (replaced functions, new threads or processes, mutated
inputs). The reference runs on its own fresh copies. The first candidate call in the process comes
before the reference ever ran; each input set is run candidate -> reference -> candidate, and both
candidate outputs must pass (bit-level differences between them are a warning).
"""

from __future__ import annotations

import sys
import traceback
from pathlib import Path
from typing import Any

import torch
from kernelevolve.search import gpu_lock
from kernelevolve.search.config import EvalConfig
from kernelevolve.search.correctness import (
    Comparison,
    bitwise_differs,
    compare_outputs,
    detached_copy,
    output_storages,
)
from kernelevolve.search.ghost import LaunchInterceptor, poison_allocator, poisoned_allocations
from kernelevolve.search.guards import BROAD_OWNERS, TIMER_OWNERS, IntegrityGuard, ProcessState, warm_runtime
from kernelevolve.search.inputs import (
    InputSet,
    build_input_sets,
    flatten_tensors,
    fresh_copy,
    mutation,
    seed_everything,
    to_device,
)
from kernelevolve.search.results import (
    EvalResult,
    InputSetResult,
    ShapeTiming,
    Stage,
    TimingKind,
    Verdict,
)
from kernelevolve.search.worker_errors import ProblemFault, Reject

MAX_POISON_SIZES = 16
REVALIDATE_SEED_OFFSET = 1000


def _exc_text(exc: BaseException, candidate_file: str | None = None) -> str:
    """``Type: message`` plus the deepest line of the candidate's file in the traceback."""
    text = f"{type(exc).__name__}: {exc}".strip()
    if len(text) > 1500:
        text = text[:1500] + " [...]"
    if candidate_file:
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == candidate_file]
        if frames:
            text += (
                f" (at {Path(candidate_file).name}:{frames[-1].lineno}: {(frames[-1].line or '').strip()})"
            )
    return text


class CandidateRunner:
    def __init__(
        self, model: torch.nn.Module, device: str, interceptor: LaunchInterceptor, candidate_file: str
    ):
        self.model = model
        self.device = device
        self.interceptor = interceptor
        self.candidate_file = candidate_file
        self.broad = IntegrityGuard(BROAD_OWNERS)
        self.timers = IntegrityGuard(TIMER_OWNERS)
        self.poison_sizes: list[int] = []
        self.calls = 0

    def learn_sizes(self, obj: Any) -> None:
        for t in flatten_tensors(obj):
            nbytes = t.numel() * t.element_size()
            if nbytes and nbytes not in self.poison_sizes and len(self.poison_sizes) < MAX_POISON_SIZES:
                self.poison_sizes.append(nbytes)

    def sync(self) -> None:
        if self.device.startswith("cuda"):
            torch.cuda.synchronize()

    def check_tamper(self, where: str, stage: Stage) -> None:
        """Broad owners: changed since the window opened; timers: changed since before the import."""
        changed = list(dict.fromkeys(self.broad.tampered() + self.timers.tampered()))
        if changed:
            shown = ", ".join(changed[:5]) + (" ..." if len(changed) > 5 else "")
            raise Reject(stage, f"{where}: the candidate replaced {shown} (tampering with the harness)")

    def call(self, s: InputSet, stage: Stage) -> tuple[Any, Any, int]:
        """Run the candidate once on fresh copies of ``s``; return (output, snapshot, launches)."""
        args = fresh_copy(s.args)
        self.learn_sizes(s.args)
        poison_allocator(self.device, self.poison_sizes)
        before = ProcessState.now()
        if self.calls:  # the first call shares its window with the import (torch may patch itself between)
            self.broad.take()
        first = self.calls == 0
        self.calls += 1
        self.interceptor.launches = 0
        self.interceptor.failed_launches.clear()
        try:
            with gpu_lock.current().shared(), torch.no_grad():
                out = self.model(*args)
                self.sync()
        except BaseException as exc:  # noqa: BLE001 - SystemExit too: the candidate must not end us
            traceback.print_exception(exc, file=sys.stderr)
            raise Reject(stage, f"{s.name}: forward raised {_exc_text(exc, self.candidate_file)}") from exc
        launches = self.interceptor.launches
        if self.interceptor.failed_launches:
            raise Reject(
                Stage.CORRECTNESS,
                f"{s.name}: a Triton launch raised and the candidate returned anyway "
                f"({self.interceptor.failed_launches[0]}); a failed kernel must fail the call",
            )
        self.check_tamper(s.name, stage)
        grown = ProcessState.now().grown_since(before)
        # Runtimes may start a native thread on the very first launch; Python threads never.
        if grown and not (first and "native" in grown):
            raise Reject(Stage.CORRECTNESS, f"{s.name}: the candidate {grown} after returning")
        changed = mutation(s.args, args)
        if changed:
            raise Reject(Stage.CORRECTNESS, f"{s.name}: {changed} by the candidate (inputs must not change)")
        return out, detached_copy(out), launches


def _reference(model: torch.nn.Module, s: InputSet, device: str) -> Any:
    try:
        with gpu_lock.current().shared(), torch.no_grad():
            out = model(*fresh_copy(s.args))
            if device.startswith("cuda"):
                torch.cuda.synchronize()
    except Exception as exc:
        raise ProblemFault(f"the reference Model raised on input set {s.name}: {_exc_text(exc)}") from exc
    return out


def _build_models(
    problem: Any, candidate: Any, device: str, candidate_file: str
) -> tuple[Any, Any, list[str]]:
    notes: list[str] = []
    try:
        seed_everything(0)
        init = list(problem.get_init_inputs())
        seed_everything(0)
        reference = problem.Model(*init)
    except Exception as exc:
        raise ProblemFault(f"building the reference Model failed: {_exc_text(exc)}") from exc
    try:
        seed_everything(0)
        model = candidate.ModelNew(*init)
    except BaseException as exc:  # noqa: BLE001
        raise Reject(Stage.COMPILE, f"constructing ModelNew raised {_exc_text(exc, candidate_file)}") from exc
    if not isinstance(model, torch.nn.Module):
        raise Reject(Stage.COMPILE, f"ModelNew(...) is a {type(model).__name__}, not a torch.nn.Module")
    ref_state, new_state = reference.state_dict(), model.state_dict()
    same_layout = ref_state.keys() == new_state.keys() and all(
        ref_state[k].shape == new_state[k].shape for k in ref_state
    )
    if ref_state and same_layout:
        model.load_state_dict(ref_state)
    elif ref_state:
        notes.append(
            "ModelNew's parameters differ from Model's in names or shapes; reference weights not copied"
        )
    try:
        model = model.to(device).eval()
    except BaseException as exc:  # noqa: BLE001
        raise Reject(
            Stage.COMPILE, f"moving ModelNew to {device} raised {_exc_text(exc, candidate_file)}"
        ) from exc
    return reference.to(device).eval(), model, notes


def _tolerances(problem: Any) -> tuple[Any, Any]:
    return getattr(problem, "ATOL", None), getattr(problem, "RTOL", None)


class Evaluation:
    def __init__(self, job: dict[str, Any], progress: Any, warnings: list[str]) -> None:
        self.job = job
        self.progress = progress
        self.config = EvalConfig.from_dict(job["config"])
        self.warnings = warnings
        self.input_sets: list[InputSetResult] = []
        self.timings: list[ShapeTiming] = []
        self.device = "cpu"

    def run(self) -> EvalResult:
        from kernelevolve.search.worker import enter_gpu_lock, load_problem, prepare_device

        self.progress("setup")
        self.device = prepare_device(self.config)
        gpu = enter_gpu_lock(self.job, self.device)
        interceptor = LaunchInterceptor()
        interceptor.install()
        with gpu.shared():
            warm_runtime(self.device)
        problem = load_problem(Path(self.job["problem_path"]))
        self.atol, self.rtol = _tolerances(problem)
        try:
            with gpu.shared():
                sets = build_input_sets(problem, self.config.seeds, self.device)
        except Exception as exc:
            raise ProblemFault(f"building the problem's inputs failed: {_exc_text(exc)}") from exc
        if not sets:
            raise ProblemFault(
                "the problem yields no input sets (config.seeds is empty and no get_test_inputs)"
            )

        self.progress(Stage.COMPILE.value)
        candidate_file = self.job["candidate_path"]
        timers = IntegrityGuard(TIMER_OWNERS)
        broad = IntegrityGuard(BROAD_OWNERS)
        timers.take()
        broad.take()
        before_import = ProcessState.now()
        with gpu.shared():  # importing and constructing the candidate may touch the GPU
            try:
                candidate = _import_candidate(candidate_file)
            except BaseException as exc:  # noqa: BLE001
                raise Reject(
                    Stage.COMPILE, f"importing the candidate raised {_exc_text(exc, candidate_file)}"
                ) from exc
            reference, model, notes = _build_models(problem, candidate, self.device, candidate_file)
        self.warnings += notes
        runner = CandidateRunner(model, self.device, interceptor, candidate_file)
        runner.broad, runner.timers = broad, timers
        runner.check_tamper("import", Stage.COMPILE)
        grown = ProcessState.now().grown_since(before_import)
        if grown and "native" not in grown:  # runtimes may start native threads; Python code may not
            raise Reject(Stage.COMPILE, f"importing or constructing the candidate {grown}")

        refs = self.correctness(runner, reference, sets)
        self.ghost(runner, sets[0], refs[sets[0].name])
        if not self.config.skip_timing:
            self.progress(Stage.TIMING.value)
            self.time(runner, reference, sets)
        self.progress(Stage.CORRECTNESS.value)
        self.revalidate(runner, reference, problem)
        return self.finish(Verdict.CORRECT, Stage.DONE, None)

    def correctness(self, runner: CandidateRunner, reference: Any, sets: list[InputSet]) -> dict[str, Any]:
        refs: dict[str, Any] = {}
        self.zero_launch: list[str] = []
        for i, s in enumerate(sets):
            out1, snap1, launches = runner.call(s, Stage.COMPILE if i == 0 else Stage.CORRECTNESS)
            if i == 0:
                self.progress(Stage.CORRECTNESS.value)
            ref = _reference(reference, s, self.device)
            runner.learn_sizes(ref)
            out2, snap2, _ = runner.call(s, Stage.CORRECTNESS)
            if output_storages(out1) & output_storages(out2):
                self._record(s, Comparison(False, reason="returned the same output buffer on two calls"))
                raise Reject(
                    Stage.CORRECTNESS,
                    f"{s.name}: two calls returned the same output buffer (outputs cached or reused across calls)",
                )
            for label, snap in (
                ("first run, before the reference", snap1),
                ("second run, after the reference", snap2),
            ):
                cmp = compare_outputs(snap, ref, self.atol, self.rtol)
                if not cmp.passed:
                    self._record(s, cmp)
                    raise Reject(Stage.CORRECTNESS, f"{s.name} ({label}): {cmp.reason}")
            self._record(s, compare_outputs(snap2, ref, self.atol, self.rtol))
            if bitwise_differs(snap1, snap2):
                self.warnings.append(
                    f"{s.name}: two runs on the same inputs differ at the bit level (non-deterministic)"
                )
            if s.name.startswith("seed:") and launches == 0:
                self.zero_launch.append(s.name)
            refs[s.name] = ref
            del out1, out2
        return refs

    def ghost(self, runner: CandidateRunner, s: InputSet, ref: Any) -> None:
        self.progress(Stage.GHOST.value)
        if self.zero_launch:
            raise Reject(Stage.GHOST, f"no Triton kernel was launched on input set {self.zero_launch[0]}")
        args = fresh_copy(s.args)
        try:
            with (
                gpu_lock.current().shared(),
                runner.interceptor.ghost_mode(),
                poisoned_allocations(),
                torch.no_grad(),
            ):
                out = runner.model(*args)
                runner.sync()
        except BaseException:  # noqa: BLE001 - failing without its kernels is what an honest candidate does
            return
        if compare_outputs(detached_copy(out), ref, self.atol, self.rtol).passed:
            raise Reject(
                Stage.GHOST,
                f"{s.name}: the output still matches the reference with every Triton launch made a no-op "
                "and fresh allocations poisoned: the kernels are not doing the work",
            )

    def time(self, runner: CandidateRunner, reference: Any, sets: list[InputSet]) -> None:
        from kernelevolve.search.perf import TimingUnavailable, floor_violation, time_input_set

        seen: set[str] = set()
        for s in sets:
            kind = s.name.split(":")[0]
            if kind == "test" and not self.config.time_test_inputs:
                continue
            if kind == "seed" and seen:
                continue
            key = repr((s.shapes, s.dtypes))
            if key in seen:
                continue
            seen.add(key)
            try:
                timing = time_input_set(
                    s.name, runner.model, reference, fresh_copy(s.args), self.config, self.device
                )
            except TimingUnavailable as exc:  # no honest number for this set: say so, invent none
                self.warnings.append(f"{s.name}: {exc}")
                continue
            except BaseException as exc:  # noqa: BLE001
                raise Reject(
                    Stage.TIMING, f"{s.name}: timing failed: {_exc_text(exc, runner.candidate_file)}"
                ) from exc
            self.timings.append(timing)
            self.warnings += [f"{s.name}: {note}" for note in timing.notes]
            violation = floor_violation(timing)
            if violation:
                raise Reject(Stage.TIMING, f"{s.name}: {violation}")
            changed = runner.timers.tampered()
            if changed:
                raise Reject(
                    Stage.TIMING,
                    f"{s.name}: timer functions were replaced during timing: {', '.join(changed)}",
                )

    def revalidate(self, runner: CandidateRunner, reference: Any, problem: Any) -> None:
        """Fresh inputs after everything else: catches outputs cached across calls or by shape."""
        seed = REVALIDATE_SEED_OFFSET + max(self.config.seeds, default=0)
        seed_everything(seed)
        try:
            with gpu_lock.current().shared():
                s = InputSet(f"revalidate:{seed}", to_device(list(problem.get_inputs()), self.device))
        except Exception as exc:
            raise ProblemFault(f"building the problem's inputs failed: {_exc_text(exc)}") from exc
        _, snap, _ = runner.call(s, Stage.CORRECTNESS)
        ref = _reference(reference, s, self.device)
        cmp = compare_outputs(snap, ref, self.atol, self.rtol)
        self._record(s, cmp)
        if not cmp.passed:
            raise Reject(Stage.CORRECTNESS, f"{s.name} (fresh inputs after all other runs): {cmp.reason}")

    def _record(self, s: InputSet, cmp: Comparison) -> None:
        self.input_sets.append(
            InputSetResult(
                s.name, s.shapes, s.dtypes, cmp.passed, cmp.max_abs_err, cmp.max_rel_err, cmp.reason
            )
        )

    def finish(self, verdict: Verdict, stage: Stage, reason: str | None) -> EvalResult:
        result = EvalResult(
            verdict=verdict,
            stage=stage,
            reason=reason,
            input_sets=self.input_sets,
            timings=self.timings,
            warnings=self.warnings,
            gpu_wait_s=round(gpu_lock.current().waited_s, 3),
            gpu_exclusive_s=round(gpu_lock.current().exclusive_s, 3),
        )
        if self.timings:
            result.timing_kind = (
                TimingKind.MEASURED if self.device.startswith("cuda") else TimingKind.MODELLED
            )
        if verdict is Verdict.CORRECT or self.timings:
            result.fingerprint = self._fingerprint()
        return result

    def _fingerprint(self) -> Any:
        try:
            from kernelevolve.search.fingerprint import collect
        except ImportError as exc:
            self.warnings.append(f"no fingerprint: {exc}")
            return None
        try:
            return collect(self.device, None if self.device.startswith("cuda") else self.config.hardware)
        except Exception as exc:  # noqa: BLE001 - a missing fingerprint must not hide the verdict
            self.warnings.append(f"no fingerprint: {type(exc).__name__}: {exc}")
            return None


def _import_candidate(path: str) -> Any:
    from kernelevolve.search.worker import import_file

    module = import_file("kernelevolve_candidate", Path(path))
    if not hasattr(module, "ModelNew"):
        raise AttributeError("the candidate module defines no ModelNew")
    return module


def evaluate_candidate(job: dict[str, Any], progress: Any, warnings: list[str]) -> EvalResult:
    evaluation = Evaluation(job, progress, warnings)
    try:
        return evaluation.run()
    except Reject as rej:
        return evaluation.finish(Verdict.REJECTED, rej.stage, rej.reason)
    finally:
        sys.stdout.flush()
