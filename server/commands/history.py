"""`kernelevolve history [--run N] [--limit N] [--problem PATH]`: runs, newest first, or one run.

Other features add columns to the runs table (and sections to one run's view) without editing
this file: ``register_run_column`` / ``register_run_section`` from their own command module, which
the CLI imports before parsing.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelevolve.search.history import CandidateRecord, History, RunRecord
from kernelevolve.server import render
from kernelevolve.server.argtypes import positive_int
from kernelevolve.server.cli import CommandError, db_path, wants_json

# (history, runs shown) -> {run_id: value}; a value of None shows as "-".
RunColumnFn = Callable[[History, Sequence[RunRecord]], dict[int, Any]]
# (history, run) -> [(label, text), ...] shown under the run, or None to show nothing.
RunSectionFn = Callable[[History, RunRecord], "list[tuple[str, str]] | None"]


@dataclass(frozen=True)
class RunColumn:
    name: str
    compute: RunColumnFn


@dataclass(frozen=True)
class RunSection:
    title: str
    compute: RunSectionFn


RUN_COLUMNS: list[RunColumn] = []
RUN_SECTIONS: list[RunSection] = []


def register_run_column(name: str, compute: RunColumnFn) -> None:
    """Add a column to `kernelevolve history` (and a key to each run in its --json)."""
    if all(c.name != name for c in RUN_COLUMNS):
        RUN_COLUMNS.append(RunColumn(name, compute))


def register_run_section(title: str, compute: RunSectionFn) -> None:
    """Add a titled block of fields to `kernelevolve history --run N` (and a key to its --json)."""
    if all(s.title != title for s in RUN_SECTIONS):
        RUN_SECTIONS.append(RunSection(title, compute))


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser(
        "history",
        help="list recorded runs, or one run's candidates",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--run", type=int, default=None, metavar="N", help="show run N and its candidates")
    parser.add_argument(
        "--limit", type=positive_int, default=20, metavar="N", help="runs to list (default 20)"
    )
    parser.add_argument(
        "--problem", type=Path, default=None, metavar="PATH", help="only runs of this problem"
    )
    parser.add_argument("--events", action="store_true", help="with --run: also list the run's events")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    path = db_path(args)
    if not path.exists():
        if args.run is not None:
            raise CommandError(f"run {args.run} not found: no history database at {path}")
        if wants_json(args):
            print(render.dumps({"db": str(path), "runs": []}))
        else:
            print(f"no runs yet: no history database at {path}")
        return 0
    with History(path) as history:
        if args.run is not None:
            return _show_run(history, args)
        return _list_runs(history, args)


def _list_runs(history: History, args: argparse.Namespace) -> int:
    problem = str(args.problem) if args.problem else None
    runs = history.list_runs(limit=args.limit, problem_path=problem)
    counts = {r.id: history.count_candidates(r.id) for r in runs}
    best: dict[int, CandidateRecord] = {}
    for r in runs:
        b = history.best_candidate(r.id)
        if b is not None:
            best[r.id] = b
    extra = {column.name: column.compute(history, runs) for column in RUN_COLUMNS}
    if wants_json(args):
        rows = []
        for r in runs:
            row = r.to_dict()
            row["candidates"] = counts[r.id]
            row["best"] = _best_dict(best.get(r.id))
            for name, values in extra.items():
                row[name] = values.get(r.id)
            rows.append(row)
        print(render.dumps({"db": str(history.path), "runs": rows}))
        return 0
    console = render.stdout_console()
    if not runs:
        console.print(f"no runs recorded in {history.path}", markup=False)
        return 0
    table = render.runs_table(runs, counts, best)
    for name, values in extra.items():
        table.columns.append(name)
        for cells, r in zip(table.rows, runs, strict=True):
            value = values.get(r.id)
            cells.append(render.DASH if value is None else str(value))
    render.print_table(console, table)
    return 0


def _show_run(history: History, args: argparse.Namespace) -> int:
    run_record = history.get_run(args.run)
    if run_record is None:
        raise CommandError(f"run {args.run} not found in {history.path}")
    counts = history.count_candidates(run_record.id)
    candidates = history.list_candidates(run_record.id)
    sections = [(s.title, s.compute(history, run_record)) for s in RUN_SECTIONS]
    events = history.list_events(run_record.id) if args.events else None
    if wants_json(args):
        data: dict[str, Any] = {
            "db": str(history.path),
            "run": run_record.to_dict() | {"candidates": counts},
            "candidates": [_candidate_row(c) for c in candidates],
        }
        if events is not None:
            data["events"] = events
        for title, fields in sections:
            data[title] = dict(fields) if fields is not None else None
        print(render.dumps(data))
        return 0
    console = render.stdout_console()
    render.render_run(console, run_record, counts)
    for title, fields in sections:
        if fields:
            console.print()
            console.print(title, markup=False, style="bold")
            render.print_fields(console, fields)
    if candidates:
        console.print()
        render.print_table(console, render.candidates_table(candidates))
    if events is not None:
        console.print()
        render.print_table(console, render.events_table(events))
    return 0


def _best_dict(candidate: CandidateRecord | None) -> dict[str, Any] | None:
    if candidate is None:
        return None
    return {
        "candidate_id": candidate.id,
        "speedup": candidate.speedup,
        "fitness": candidate.fitness,
        "timing": candidate.timing_kind,
        "device": candidate.device,
    }


def _candidate_row(c: CandidateRecord) -> dict[str, Any]:
    return {
        "candidate_id": c.id,
        "parent_id": c.parent_id,
        "step": c.step,
        "operator": c.operator,
        "note": c.note,
        "status": c.status,
        "verdict": c.verdict,
        "stage": c.stage,
        "reason": c.reason,
        "timing": c.timing_kind,
        "speedup": c.speedup,
        "speedup_vs_eager": c.speedup_vs_eager,
        "speedup_vs_compile": c.speedup_vs_compile,
        "roofline_fraction": c.roofline_fraction,
        "fitness": c.fitness,
        "device": c.device,
        "stale": c.stale,
        "source_hash": c.source_hash,
        "created_at": c.created_at,
        "evaluated_at": c.evaluated_at,
    }
