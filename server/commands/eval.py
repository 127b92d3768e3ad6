"""`kernelevolve eval PROBLEM CANDIDATE`: prove one candidate kernel correct, time it, record it.

The files are checked first (a missing piece is one line on stderr, exit 2); then a run of kind
'eval' and its candidate are recorded, the harness evaluates the candidate in a sandboxed worker,
and the evaluation is stored before anything is printed. Exit 0 whenever an evaluation happened,
whatever its verdict.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

from kernelevolve.search import events
from kernelevolve.search.config import EvalConfig
from kernelevolve.search.fitness import fitness
from kernelevolve.search.history import History
from kernelevolve.search.problem import load_candidate_file, load_problem_file, source_hash
from kernelevolve.search.results import EvalResult
from kernelevolve.server import render
from kernelevolve.server.cli import CommandError, db_path, wants_json


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser(
        "eval",
        help="evaluate one candidate kernel against a problem and record the result",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "problem", type=Path, help="problem file (KernelBench format: Model, get_inputs, ...)"
    )
    parser.add_argument(
        "candidate", type=Path, help="candidate file defining ModelNew with @triton.jit kernels"
    )
    parser.add_argument(
        "--device",
        choices=["auto", "cuda", "cpu"],
        default="auto",
        help="auto: the GPU when one is visible, else the CPU interpreter with modelled timing",
    )
    parser.add_argument(
        "--max-autotune",
        action="store_true",
        help="also time torch.compile(mode='max-autotune') as a baseline",
    )
    parser.add_argument(
        "--timeout",
        type=_positive_seconds,
        default=None,
        metavar="S",
        help=f"wall-clock limit of the sandboxed worker (default {EvalConfig().limits.timeout_s:g} s)",
    )
    parser.set_defaults(handler=run)


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds: {text!r}")
    return value


def eval_config(args: argparse.Namespace) -> EvalConfig:
    config = EvalConfig(device=args.device, max_autotune_baseline=args.max_autotune)
    if args.timeout is not None:
        config = dataclasses.replace(
            config, limits=dataclasses.replace(config.limits, timeout_s=args.timeout)
        )
    return config


def run(args: argparse.Namespace) -> int:
    problem = Path(args.problem).expanduser().resolve()
    candidate = Path(args.candidate).expanduser().resolve()
    problem_source = load_problem_file(problem)
    candidate_source = load_candidate_file(candidate)
    config = eval_config(args)
    path = db_path(args)

    with History(path) as history:
        run_id = history.create_run(
            kind="eval",
            problem_path=str(problem),
            problem_hash=source_hash(problem_source),
            signature=None,
            strategy=None,
            config={"eval": config.to_dict(), "candidate_path": str(candidate)},
            device=args.device,
            timing_kind=None,
        )
        candidate_id = history.add_candidate(
            run_id=run_id, parent_id=None, operator="user", source=candidate_source, note=str(candidate)
        )
        try:
            with _stdout_reserved_for_json(wants_json(args)):
                result = _evaluate_with_progress(problem, candidate, candidate_source, config)
        except KeyboardInterrupt:
            history.finish_run(run_id, status="cancelled", reason="interrupted", best_candidate_id=None)
            raise
        except Exception as exc:
            history.finish_run(
                run_id, status="failed", reason=f"{type(exc).__name__}: {exc}", best_candidate_id=None
            )
            raise
        _record(history, run_id, candidate_id, result)
        record = history.get_candidate(candidate_id)
        run_record = history.get_run(run_id)
    if record is None:  # pragma: no cover - written above in this process
        raise CommandError(f"candidate {candidate_id} vanished from {path}", code=1)

    if wants_json(args):
        summary = render.candidate_summary(record, run_record)
        summary["db"] = str(path)
        print(render.dumps(summary), flush=True)
    else:
        render.render_evaluation(render.stdout_console(), record, run_record)
    return 0


def _record(history: History, run_id: int, candidate_id: int, result: EvalResult) -> None:
    score = fitness(result, None)
    history.record_evaluation(candidate_id, result, score)
    device = result.fingerprint.device if result.fingerprint else None
    timing_kind = result.timing_kind.value if result.timing_kind else None
    history.add_event(
        run_id,
        "candidate_evaluated",
        events.to_dict(
            events.CandidateEvaluated(
                run_id=run_id,
                candidate_id=candidate_id,
                parent_id=None,
                operator="user",
                verdict=result.verdict.value,
                stage=result.stage.value,
                reason=result.reason,
                speedup=result.speedup if result.correct else None,
                fitness=score,
                timing_kind=timing_kind,
                device=device or "",
                diff="",
            )
        ),
    )
    history.finish_run(
        run_id,
        status="finished",
        reason=result.verdict.value if result.correct else f"rejected at {result.stage.value}",
        best_candidate_id=candidate_id if result.correct else None,
        device=device,
        timing_kind=timing_kind,
    )


def _evaluate_with_progress(problem: Path, candidate: Path, source: str, config: EvalConfig) -> EvalResult:
    """Evaluate on a thread so Ctrl-C cancels the worker; a spinner on stderr when it is a terminal."""
    from kernelevolve.search.harness import evaluate

    cancel = threading.Event()
    outcome: dict[str, EvalResult | BaseException] = {}

    def target() -> None:
        try:
            outcome["result"] = evaluate(
                problem, source, config, candidate_name=candidate.name, cancel=cancel
            )
        except BaseException as exc:
            outcome["error"] = exc

    console = render.stderr_console()
    status = (
        console.status(f"Evaluating {candidate.name} against {problem.name}...")
        if console.is_terminal
        else contextlib.nullcontext()
    )
    worker = threading.Thread(target=target, name="kernelevolve-eval", daemon=True)
    with status:
        worker.start()
        try:
            while worker.is_alive():
                worker.join(0.1)
        except KeyboardInterrupt:
            cancel.set()
            worker.join(timeout=30)
            raise
    error = outcome.get("error")
    if isinstance(error, BaseException):
        raise error
    result = outcome["result"]
    assert isinstance(result, EvalResult)
    return result


@contextlib.contextmanager
def _stdout_reserved_for_json(reserve: bool) -> Iterator[None]:
    """With --json, anything written to fd 1 while evaluating (a library's print, a child process)
    goes to stderr, so stdout stays exactly one JSON object."""
    if not reserve:
        yield
        return
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)
