"""How the CLI shows history rows: rich tables on a terminal, plain aligned text otherwise, JSON.

Every renderer takes a ``rich.console.Console``; ``console.is_terminal`` picks rich or plain text,
so piping ``kernelevolve history`` into a file gives clean columns with no box drawing or colour.
Modelled timings are always labelled as such, never shown as if measured.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelevolve.search.history import CandidateRecord, RunRecord
from kernelevolve.search.results import ShapeTiming
from rich import box
from rich.console import Console
from rich.panel import Panel
from rich.syntax import Syntax
from rich.table import Table as RichTable
from rich.text import Text

DASH = "-"


def stdout_console() -> Console:
    return Console(highlight=False, soft_wrap=True)


def stderr_console() -> Console:
    return Console(stderr=True, highlight=False)


# -- JSON ------------------------------------------------------------------------------------------


def jsonable(value: Any) -> Any:
    """Strict JSON: non-finite floats (a NaN error, an infinite ratio) become null."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    return value


def dumps(value: Any) -> str:
    return json.dumps(jsonable(value), allow_nan=False)


def timing_dict(t: ShapeTiming) -> dict[str, Any]:
    """One input set's timings, flattened, with the derived speedups."""
    return {
        "input_set": t.input_set,
        "shapes": t.shapes,
        "kind": t.kind.value,
        "candidate_ms": t.candidate.median_ms,
        "candidate_spread_ms": t.candidate.spread_ms,
        "eager_ms": t.eager.median_ms,
        "compile_ms": t.compile.median_ms if t.compile else None,
        "compile_max_autotune_ms": t.compile_max_autotune.median_ms if t.compile_max_autotune else None,
        "speedup": t.speedup,
        "speedup_vs_eager": t.speedup_vs_eager,
        "speedup_vs_compile": t.speedup_vs_compile,
        "roofline_fraction": t.roofline_fraction,
        "roofline": _asdict(t.roofline),
        "notes": list(t.notes),
    }


def candidate_summary(candidate: CandidateRecord, run: RunRecord | None) -> dict[str, Any]:
    """The stable object of ``kernelevolve eval --json`` (and the head of ``show --json``)."""
    result = candidate.result
    summary: dict[str, Any] = (
        result.summary()
        if result
        else {
            "verdict": None,
            "stage": None,
            "reason": None,
            "timing": None,
            "speedup": None,
            "speedup_vs_eager": None,
            "speedup_vs_compile": None,
            "roofline_fraction": None,
            "device": None,
        }
    )
    if not candidate.correct:  # a rejected kernel has no speedup, whatever its timings said
        summary.update(speedup=None, speedup_vs_eager=None, speedup_vs_compile=None, roofline_fraction=None)
    summary.update(
        {
            "candidate_id": candidate.id,
            "run_id": candidate.run_id,
            "status": candidate.status,
            "fitness": candidate.fitness,
            "problem": run.problem_path if run else None,
            "input_sets": [_asdict(s) for s in candidate.input_sets],
            "timings": [timing_dict(t) for t in candidate.timings],
            "fingerprint": _asdict(candidate.fingerprint),
            "warnings": list(result.warnings) if result else [],
            "duration_s": result.duration_s if result else None,
            "stale": candidate.stale,
            "stale_reason": candidate.stale_reason,
        }
    )
    return summary


def candidate_detail(candidate: CandidateRecord, run: RunRecord | None) -> dict[str, Any]:
    """``kernelevolve show --json``: the summary plus source, diff, lineage and the raw result."""
    detail = candidate_summary(candidate, run)
    detail.update(
        {
            "parent_id": candidate.parent_id,
            "operator": candidate.operator,
            "note": candidate.note,
            "step": candidate.step,
            "source_hash": candidate.source_hash,
            "source": candidate.source,
            "diff": candidate.diff,
            "created_at": candidate.created_at,
            "evaluated_at": candidate.evaluated_at,
            "log_tail": candidate.result.log_tail if candidate.result else "",
            "result": candidate.result.to_dict() if candidate.result else None,
        }
    )
    return detail


def _asdict(obj: Any) -> Any:
    if obj is None:
        return None
    return jsonable(dataclasses.asdict(obj))


# -- plain values ----------------------------------------------------------------------------------


def fmt_speedup(value: float | None) -> str:
    if value is None or not math.isfinite(value):
        return DASH
    return f"{value:.2f}x"


def fmt_fraction(value: float | None) -> str:
    if value is None or not math.isfinite(value):
        return DASH
    return f"{value * 100:.1f}%"


def fmt_ms(value: float | None) -> str:
    if value is None or not math.isfinite(value):
        return DASH
    if value < 0.01:
        return f"{value * 1000:.2f} us"
    return f"{value:.3f} ms"


def fmt_err(value: float | None) -> str:
    if value is None:
        return DASH
    return f"{value:.2e}" if math.isfinite(value) else str(value)


def fmt_shapes(shapes: Sequence[Sequence[int]]) -> str:
    return ", ".join("x".join(map(str, s)) if s else "scalar" for s in shapes)


def one_line(text: str | None, width: int = 80) -> str:
    if not text:
        return ""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 3] + "..."


# -- tables and fields -----------------------------------------------------------------------------


@dataclass
class Table:
    title: str
    columns: list[str]
    rows: list[list[str]] = field(default_factory=list)
    right_aligned: set[int] = field(default_factory=set)
    flexible: set[int] = field(default_factory=set)  # may wrap on a narrow terminal
    optional: list[int] = field(default_factory=list)  # dropped, in this order, when it is too narrow


def print_table(console: Console, table: Table) -> None:
    if console.is_terminal:
        console.print(_rich_table(table, console.width))
        return
    widths = [len(c) for c in table.columns]
    for row in table.rows:
        widths = [max(w, len(cell)) for w, cell in zip(widths, row, strict=True)]

    def line(cells: Sequence[str]) -> str:
        parts = [
            cell.rjust(w) if i in table.right_aligned else cell.ljust(w)
            for i, (cell, w) in enumerate(zip(cells, widths, strict=True))
        ]
        return "  ".join(parts).rstrip()

    console.print(table.title, markup=False)
    console.print(line(table.columns), markup=False)
    for row in table.rows:
        console.print(line(row), markup=False)


def _rich_table(table: Table, width: int) -> RichTable:
    """Columns at their natural width; on a narrow terminal the ``optional`` ones are dropped
    (in order) and the ``flexible`` ones wrap, rather than squeezing every column to nothing."""
    natural = [
        max([len(name)] + [len(row[i]) for row in table.rows]) + 2 for i, name in enumerate(table.columns)
    ]
    shown = list(range(len(table.columns)))
    for drop in table.optional:
        if sum(natural[i] for i in shown) <= width:
            break
        shown.remove(drop)
    fixed = sum(natural[i] for i in shown if i not in table.flexible)
    flexible = [i for i in shown if i in table.flexible]
    share = max(8, (width - fixed) // max(1, len(flexible)) - 2)
    rich_table = RichTable(
        title=table.title, box=box.SIMPLE_HEAVY, title_justify="left", pad_edge=False, collapse_padding=True
    )
    for i in shown:
        rich_table.add_column(
            table.columns[i],
            justify="right" if i in table.right_aligned else "left",
            no_wrap=i not in table.flexible,
            max_width=share if i in table.flexible else None,
            overflow="fold",
        )
    for row in table.rows:
        rich_table.add_row(*(row[i] for i in shown))
    return rich_table


def print_fields(console: Console, fields: Sequence[tuple[str, str]]) -> None:
    width = max((len(k) for k, _ in fields), default=0)
    for key, value in fields:
        if console.is_terminal:
            console.print(Text.assemble((f"{key.ljust(width)}  ", "bold"), value))
        else:
            console.print(f"{key.ljust(width)}  {value}", markup=False)


def print_block(console: Console, title: str, text: str, lexer: str | None = None) -> None:
    if console.is_terminal:
        body: Any = Syntax(text, lexer, line_numbers=lexer == "python", word_wrap=True) if lexer else text
        console.print(Panel(body, title=title, title_align="left", box=box.ROUNDED))
    else:
        console.print(f"--- {title} ---", markup=False)
        console.print(text.rstrip("\n"), markup=False)


# -- domain renderers ------------------------------------------------------------------------------


def modelled_notice(candidate: CandidateRecord) -> str:
    hardware = candidate.fingerprint.hardware_model if candidate.fingerprint else None
    target = f"the {hardware} roofline" if hardware else "a target GPU's roofline"
    return (
        "MODELLED: no GPU measured this. Speed is an estimate from bytes and FLOPs counted in "
        f"Triton's interpreter, priced with {target}."
    )


def verdict_text(candidate: CandidateRecord) -> str:
    if candidate.status != "evaluated":
        return "pending (not evaluated)"
    if candidate.correct:
        return "correct"
    return f"rejected at {candidate.stage}"


def metric_fields(candidate: CandidateRecord, run: RunRecord | None) -> list[tuple[str, str]]:
    modelled = candidate.timing_kind == "modelled"

    def labelled(text: str) -> str:
        return text + " (modelled)" if modelled and text != DASH else text

    fields = [("verdict", verdict_text(candidate))]
    if candidate.reason:
        fields.append(("reason", candidate.reason))
    if candidate.timing_kind:
        fields.append(("timing", "MODELLED estimate" if modelled else "measured"))
    if candidate.correct:
        fields += [
            ("speedup", labelled(fmt_speedup(candidate.speedup)) + "  (against the best baseline)"),
            ("vs eager", labelled(fmt_speedup(candidate.speedup_vs_eager))),
            ("vs torch.compile", labelled(fmt_speedup(candidate.speedup_vs_compile))),
            ("roofline", labelled(_roofline_text(candidate.roofline_fraction))),
        ]
    fields.append(("device", candidate.device or DASH))
    if candidate.stale:
        fields.append(("STALE", candidate.stale_reason or "the problem changed since this was measured"))
    ids = f"candidate {candidate.id}, run {candidate.run_id}"
    if candidate.parent_id is not None:
        ids += f", parent {candidate.parent_id}"
    fields.append(("ids", ids))
    if run is not None:
        fields.append(("problem", run.problem_path))
    return fields


def _roofline_text(fraction: float | None) -> str:
    return DASH if fraction is None else f"{fmt_fraction(fraction)} of the speed-of-light floor"


def input_sets_table(candidate: CandidateRecord) -> Table:
    table = Table("Input sets", ["set", "shapes", "dtypes", "ok", "max abs err", "max rel err", "reason"])
    for s in candidate.input_sets:
        table.rows.append(
            [
                s.name,
                fmt_shapes(s.shapes),
                ", ".join(s.dtypes),
                "yes" if s.passed else "NO",
                fmt_err(s.max_abs_err),
                fmt_err(s.max_rel_err),
                one_line(s.reason, 60),
            ]
        )
    return table


def timings_table(candidate: CandidateRecord) -> Table:
    label = (
        "Timings (MODELLED estimate)" if candidate.timing_kind == "modelled" else "Timings (measured, median)"
    )
    table = Table(
        label,
        ["set", "shapes", "ours", "eager", "compile", "speedup", "roofline"],
        right_aligned={2, 3, 4, 5, 6},
    )
    for t in candidate.timings:
        table.rows.append(
            [
                t.input_set,
                fmt_shapes(t.shapes),
                fmt_ms(t.candidate.median_ms),
                fmt_ms(t.eager.median_ms),
                fmt_ms(t.compile.median_ms) if t.compile else DASH,
                fmt_speedup(t.speedup),
                fmt_fraction(t.roofline_fraction),
            ]
        )
    return table


def fingerprint_fields(candidate: CandidateRecord) -> list[tuple[str, str]]:
    fp = candidate.fingerprint
    if fp is None:
        return []
    values = _asdict(fp)
    return [(k, str(v)) for k, v in values.items() if v is not None]


def render_evaluation(console: Console, candidate: CandidateRecord, run: RunRecord | None) -> None:
    """What `kernelevolve eval` prints: verdict and metrics, input sets, timings, fingerprint."""
    if candidate.timing_kind == "modelled":
        _print_modelled_banner(console, candidate)
    print_fields(console, metric_fields(candidate, run))
    if candidate.input_sets:
        console.print()
        print_table(console, input_sets_table(candidate))
    if candidate.timings:
        console.print()
        print_table(console, timings_table(candidate))
    warnings = candidate.result.warnings if candidate.result else []
    for warning in warnings:
        console.print(f"warning: {warning}", markup=False, style="yellow")
    fp = fingerprint_fields(candidate)
    if fp:
        console.print()
        console.print("Fingerprint", markup=False, style="bold")
        print_fields(console, fp)


def render_candidate(console: Console, candidate: CandidateRecord, run: RunRecord | None) -> None:
    """What `kernelevolve show ID` prints: the evaluation, then lineage, source and diff."""
    render_evaluation(console, candidate, run)
    console.print()
    lineage = [("operator", candidate.operator), ("step", str(candidate.step))]
    if candidate.note:
        lineage.append(("note", candidate.note))
    lineage.append(("source sha256", candidate.source_hash))
    print_fields(console, lineage)
    console.print()
    print_block(console, f"source of candidate {candidate.id}", candidate.source, lexer="python")
    console.print()
    diff_title = f"diff against candidate {candidate.parent_id}" if candidate.parent_id else "diff (new file)"
    print_block(console, diff_title, candidate.diff or "(no changes)", lexer="diff")
    if candidate.result and candidate.result.log_tail and not candidate.correct:
        console.print()
        print_block(console, "worker log (tail)", candidate.result.log_tail)


def runs_table(
    runs: Sequence[RunRecord], counts: dict[int, dict[str, int]], best: dict[int, CandidateRecord]
) -> Table:
    table = Table(
        "Runs (newest first)",
        [
            "run",
            "kind",
            "status",
            "problem",
            "device",
            "ok/evaluated",
            "best",
            "speedup",
            "timing",
            "created",
        ],
        right_aligned={0, 5, 6, 7},
        flexible={3, 4},
        optional=[4, 9, 1, 3],
    )
    for run in runs:
        c = counts.get(run.id, {})
        b = best.get(run.id)
        table.rows.append(
            [
                str(run.id),
                run.kind,
                run.status,
                Path(run.problem_path).name,
                run.device,
                f"{c.get('correct', 0)}/{c.get('evaluated', 0)}",
                str(b.id) if b else DASH,
                fmt_speedup(b.speedup) if b else DASH,
                (b.timing_kind if b else run.timing_kind) or DASH,
                run.created_at[5:16].replace("T", " "),
            ]
        )
    return table


def candidates_table(candidates: Sequence[CandidateRecord]) -> Table:
    table = Table(
        "Candidates",
        ["id", "parent", "step", "operator", "verdict", "stage", "speedup", "fitness", "reason"],
        right_aligned={0, 1, 2, 6, 7},
        flexible={8},
        optional=[7, 2, 1],
    )
    for c in candidates:
        speedup = fmt_speedup(c.speedup) if c.correct else DASH
        if speedup != DASH and c.timing_kind == "modelled":
            speedup += " (modelled)"
        table.rows.append(
            [
                str(c.id),
                str(c.parent_id) if c.parent_id is not None else DASH,
                str(c.step),
                c.operator,
                (c.verdict or "pending") + (" (stale)" if c.stale else ""),
                c.stage or DASH,
                speedup,
                f"{c.fitness:.3f}" if c.fitness is not None else DASH,
                one_line(c.reason, 60),
            ]
        )
    return table


def events_table(events: Sequence[dict[str, Any]]) -> Table:
    table = Table("Events", ["id", "time", "kind", "payload"], right_aligned={0}, flexible={3})
    for event in events:
        payload = {k: v for k, v in event["payload"].items() if k not in ("kind", "diff", "run_id")}
        table.rows.append(
            [str(event["id"]), event["created_at"][11:23], event["kind"], one_line(dumps(payload), 100)]
        )
    return table


def render_run(console: Console, run: RunRecord, counts: dict[str, int]) -> None:
    fields = [
        ("run", f"{run.id} ({run.kind})"),
        ("status", run.status + (f": {run.reason}" if run.reason else "")),
        ("problem", run.problem_path),
        ("device", run.device),
        ("timing", run.timing_kind or DASH),
        ("strategy", run.strategy or DASH),
        ("signature", run.signature or DASH),
        ("candidates", f"{counts['total']} ({counts['evaluated']} evaluated, {counts['correct']} correct)"),
        ("best", str(run.best_candidate_id) if run.best_candidate_id is not None else DASH),
        ("created", run.created_at),
        ("finished", run.finished_at or DASH),
    ]
    print_fields(console, fields)


def _print_modelled_banner(console: Console, candidate: CandidateRecord) -> None:
    text = modelled_notice(candidate)
    if console.is_terminal:
        console.print(Panel(Text(text, style="bold yellow"), box=box.HEAVY, border_style="yellow"))
    else:
        console.print(text, markup=False)
