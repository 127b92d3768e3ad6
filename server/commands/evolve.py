"""`kernelevolve evolve PROBLEM`: search for a faster Triton kernel, prove it, keep it.

A tree search (draft proposals, then expansion with feedback) over candidates from the offline
operators (tuning, template) and, with --llm, the LLM operator. Every candidate is evaluated in
the sandboxed harness and stored in history as it goes; `--resume RUN` continues a run that was
interrupted. At the end the best kernel, a shape-bucketed dispatcher and a regression test are
written beside the problem (or at --out). Ctrl-C cancels cleanly and keeps what was evaluated.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import signal
import sys
import threading
from collections import deque
from pathlib import Path
from types import FrameType
from typing import Any

from kernelevolve.search import events
from kernelevolve.search.config import EvalConfig
from kernelevolve.search.engine import Search, SearchConfig, SearchError, SearchOutcome
from kernelevolve.search.history import History
from kernelevolve.server.argtypes import positive_float, positive_int
from kernelevolve.server.cli import CommandError, db_path, wants_json
from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

STRATEGIES = ("greedy", "beam", "mcts", "evolve")


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser(
        "evolve",
        help="search for a faster Triton kernel for a problem",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("problem", type=Path, help="problem file (KernelBench format)")
    parser.add_argument("--strategy", choices=STRATEGIES, default=None, help="selection policy (greedy)")
    parser.add_argument("--max-steps", type=positive_int, default=None, metavar="N", help="evaluations (24)")
    parser.add_argument("--time-budget", type=positive_float, default=None, metavar="S", help="seconds")
    parser.add_argument(
        "--patience",
        type=positive_int,
        default=None,
        metavar="N",
        help="stop after N without a new best (8)",
    )
    parser.add_argument("--target-speedup", type=positive_float, default=None, metavar="X")
    parser.add_argument(
        "--draft-size", type=positive_int, default=None, metavar="N", help="draft proposals (4)"
    )
    parser.add_argument("--resume", type=positive_int, default=None, metavar="RUN", help="continue run RUN")
    parser.add_argument(
        "--seed", type=Path, default=None, metavar="FILE", help="a candidate file to start from"
    )
    parser.add_argument(
        "--out", type=Path, default=None, metavar="PATH", help="where to write the best kernel"
    )
    parser.add_argument("--device", choices=["auto", "cuda", "cpu"], default=None)
    parser.add_argument(
        "--parallel",
        type=positive_int,
        default=None,
        metavar="N",
        help="evaluations in flight (default: up to 3 per GPU, timed regions exclusive; CPU: cores - 1)",
    )
    parser.add_argument(
        "--llm", action="store_true", default=None, help="use the LLM operator (needs an API key)"
    )
    parser.add_argument("--llm-model", default=None, metavar="NAME", help="model of the LLM operator")
    parser.add_argument(
        "--llm-budget-usd", type=positive_float, default=None, metavar="USD", help="LLM spend cap per run"
    )
    parser.add_argument("--no-warm-start", action="store_true", help="do not seed from prior runs")
    parser.add_argument(
        "--timeout", type=positive_float, default=None, metavar="S", help="per-evaluation limit"
    )
    parser.set_defaults(handler=run)


def build_config(args: argparse.Namespace, stored: dict[str, Any] | None = None) -> SearchConfig:
    """Flags win; a resumed run keeps its stored settings for every flag not given."""
    base = SearchConfig()
    if stored:
        known = {f.name for f in dataclasses.fields(SearchConfig)}
        kept = {k: v for k, v in stored.items() if k in known and k != "eval"}
        base = dataclasses.replace(base, **kept, eval=EvalConfig.from_dict(stored.get("eval", {})))
    flags = {
        "strategy": args.strategy,
        "max_steps": args.max_steps,
        "time_budget_s": args.time_budget,
        "patience": args.patience,
        "target_speedup": args.target_speedup,
        "draft_size": args.draft_size,
        "parallel": args.parallel,
        "llm": args.llm,
        "llm_model": getattr(args, "llm_model", None),
        "llm_budget_usd": getattr(args, "llm_budget_usd", None),
    }
    config = dataclasses.replace(base, **{k: v for k, v in flags.items() if v is not None})
    if args.no_warm_start:
        config = dataclasses.replace(config, warm_start=False)
    eval_cfg = config.eval
    if args.device is not None:
        eval_cfg = dataclasses.replace(eval_cfg, device=args.device)
    if args.timeout is not None:
        eval_cfg = dataclasses.replace(
            eval_cfg, limits=dataclasses.replace(eval_cfg.limits, timeout_s=args.timeout)
        )
    return dataclasses.replace(config, eval=eval_cfg)


class Progress:
    """Live display on a terminal (stderr); one plain line per evaluation otherwise."""

    def __init__(self, max_steps: int, console: Console) -> None:
        self.console = console
        self.max_steps = max_steps
        self.evaluated = 0
        self.best: str = "none yet"
        self.last: deque[str] = deque(maxlen=5)
        self.notices: deque[str] = deque(maxlen=3)
        self.run_id: int | None = None
        self.live: Live | None = None

    def __enter__(self) -> Progress:
        if self.console.is_terminal:
            self.live = Live(self.render(), console=self.console, refresh_per_second=4, transient=False)
            self.live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.live is not None:
            self.live.update(self.render())
            self.live.__exit__(None, None, None)

    def render(self) -> Group:
        table = Table.grid(padding=(0, 2))
        table.add_row("run", str(self.run_id or "-"))
        table.add_row("evaluated", f"{self.evaluated} / {self.max_steps}")
        table.add_row("best", self.best)
        for line in self.last:
            table.add_row("", line)
        notes = [Text(n, style="yellow") for n in self.notices]
        return Group(table, *notes)

    def __call__(self, event: events.Event) -> None:
        line: str | None = None
        if isinstance(event, events.RunStarted):
            self.run_id = event.run_id
            resumed = " (resumed)" if event.resumed else ""
            line = (
                f"run {event.run_id}{resumed}: {event.strategy}, {event.timing_kind} timing on {event.device}"
            )
        elif isinstance(event, events.CandidateEvaluated):
            self.evaluated = event.step
            what = f"{event.speedup:.2f}x" if event.speedup is not None else (event.reason or "")[:70]
            line = f"#{event.candidate_id} {event.operator}: {event.verdict} at {event.stage} {what}"
            self.last.append(line)
        elif isinstance(event, events.NewBest):
            self.best = f"{event.speedup:.2f}x {event.timing_kind} (candidate {event.candidate_id})"
            line = f"new best: {self.best}"
        elif isinstance(event, events.Notice):
            self.notices.append(event.message.splitlines()[0][:160] if event.message else "")
            line = f"{event.level}: {event.message.splitlines()[0] if event.message else ''}"
        if self.live is not None:
            self.live.update(self.render())
        elif line is not None:
            self.console.print(line, highlight=False, markup=False, soft_wrap=True)


def outcome_json(outcome: SearchOutcome, history: History) -> dict[str, Any]:
    best: dict[str, Any] | None = None
    if outcome.best_candidate_id is not None:
        best = {
            "candidate_id": outcome.best_candidate_id,
            "speedup": outcome.best_speedup,
            "timing": outcome.best_timing_kind,
            "path": str(outcome.best_path) if outcome.best_path else None,
            "dispatch_path": str(outcome.dispatch_path) if outcome.dispatch_path else None,
            "test_path": str(outcome.test_path) if outcome.test_path else None,
        }
        record = history.get_candidate(outcome.best_candidate_id)
        if record is not None:
            best["speedup_vs_eager"] = record.speedup_vs_eager
            best["speedup_vs_compile"] = record.speedup_vs_compile
            best["roofline_fraction"] = record.roofline_fraction
    data: dict[str, Any] = {
        "run_id": outcome.run_id,
        "evaluated": outcome.evaluated,
        "evaluated_this_session": outcome.evaluated_this_session,
        "status": outcome.status,
        "reason": outcome.reason,
        "best": best,
        "device": outcome.device,
        "wall_s": round(outcome.wall_s, 3),
        "throughput": outcome.throughput,
        "throughput_unit": outcome.throughput_unit,
    }
    if outcome.not_covered:
        data["not_covered"] = outcome.not_covered
    return data


def run(args: argparse.Namespace) -> int:
    database = db_path(args)
    stored: dict[str, Any] | None = None
    if args.resume is not None:
        with History(database) as history:
            record = history.get_run(args.resume)
        if record is None:
            raise CommandError(f"no run {args.resume} in {database}")
        stored = record.config
    config = build_config(args, stored)
    console = Console(file=sys.stderr)
    progress = Progress(config.max_steps, console)
    try:
        search = Search(
            args.problem, config, database, on_event=progress, resume_run=args.resume,
            out_path=args.out, seed_path=args.seed,
        )  # fmt: skip
    except SearchError as exc:
        raise CommandError(str(exc)) from None
    interrupted = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        interrupted.set()
        search.cancel()

    previous = signal.signal(signal.SIGINT, on_signal)
    try:
        with progress:
            outcome = search.run()
        data = outcome_json(outcome, search.history)
    finally:
        signal.signal(signal.SIGINT, previous)
        search.close()
    if wants_json(args):
        print(json.dumps(data))
    else:
        _print_summary(data)
    if outcome.status == "failed":
        return 1
    return 130 if interrupted.is_set() else 0


def _print_summary(data: dict[str, Any]) -> None:
    print(f"run {data['run_id']}: {data['status']} ({data['reason']}); {data['evaluated']} evaluated")
    best = data["best"]
    if best is None:
        print("no correct kernel found")
    else:
        kind = best["timing"] or "untimed"
        speed = f"{best['speedup']:.2f}x" if best["speedup"] is not None else "-"
        label = "modelled, not measured" if kind == "modelled" else kind
        print(f"best: candidate {best['candidate_id']}, {speed} ({label})")
        for key in ("path", "dispatch_path", "test_path"):
            if best.get(key):
                print(f"  {key.replace('_', ' ')}: {best[key]}")
    if data.get("not_covered"):
        print(f"not covered by the offline operators: {', '.join(data['not_covered'])}")
    if data.get("throughput") is not None:
        print(f"throughput: {data['throughput']:.2f} candidates {data['throughput_unit']}")
