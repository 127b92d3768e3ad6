"""`kernelevolve report RUN`: one self-contained HTML page about a search run.

Inline SVG only (no scripts, no external assets): the search tree coloured by verdict, a
speedup-over-steps plot, and each node's note, diff and failure reason.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

from kernelevolve.search.history import CandidateRecord, History, RunRecord

STAGE_COLOURS = {
    "load": "#8c564b",
    "static": "#e377c2",
    "compile": "#d62728",
    "correctness": "#ff7f0e",
    "ghost": "#9467bd",
    "timing": "#bcbd22",
    "sandbox": "#7f7f7f",
}
CORRECT = "#2ca02c"
PENDING = "#d9d9d9"
NODE_R = 9
X_GAP = 26
Y_GAP = 54
PAD = 24


class ReportError(ValueError):
    """The run cannot be reported (it does not exist)."""


@dataclass
class _Placed:
    record: CandidateRecord
    x: float
    y: float


def _esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def _colour(c: CandidateRecord) -> str:
    if c.status != "evaluated":
        return PENDING
    if c.verdict == "correct":
        return CORRECT
    return STAGE_COLOURS.get(c.stage or "", "#444")


def _label(c: CandidateRecord) -> str:
    if c.status != "evaluated":
        return "pending"
    if c.verdict == "correct":
        return f"{c.speedup:.2f}x" if c.speedup is not None else "correct"
    return f"rejected at {c.stage}"


def _layout(candidates: list[CandidateRecord]) -> list[_Placed]:
    """Tidy-ish tree layout: leaves left to right in depth-first order, parents centred."""
    children: dict[int | None, list[CandidateRecord]] = {}
    ids = {c.id for c in candidates}
    for c in candidates:
        parent = c.parent_id if c.parent_id in ids else None
        children.setdefault(parent, []).append(c)
    placed: list[_Placed] = []
    next_leaf = [0]

    def place(c: CandidateRecord, depth: int) -> float:
        kids = children.get(c.id, [])
        if kids:
            xs = [place(k, depth + 1) for k in kids]
            x = (min(xs) + max(xs)) / 2
        else:
            x = next_leaf[0] * X_GAP
            next_leaf[0] += 1
        placed.append(_Placed(c, PAD + x, PAD + depth * Y_GAP))
        return x

    for root in children.get(None, []):
        place(root, 0)
    return placed


def tree_svg(candidates: list[CandidateRecord], best_id: int | None) -> str:
    if not candidates:
        return "<p>No candidates.</p>"
    placed = _layout(candidates)
    where = {p.record.id: p for p in placed}
    width = max(p.x for p in placed) + PAD * 2
    height = max(p.y for p in placed) + PAD * 2
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" role="img" aria-label="search tree">'
    ]
    for p in placed:
        parent = where.get(p.record.parent_id) if p.record.parent_id is not None else None
        if parent is not None:
            parts.append(
                f'<line x1="{parent.x:.1f}" y1="{parent.y:.1f}" x2="{p.x:.1f}" y2="{p.y:.1f}" '
                'stroke="#999" stroke-width="1"/>'
            )
    for p in placed:
        c = p.record
        stroke = ' stroke="#000" stroke-width="3"' if c.id == best_id else ' stroke="#333" stroke-width="0.5"'
        title = f"#{c.id} {c.operator}: {_label(c)}" + (f" ({c.note})" if c.note else "")
        parts.append(
            f'<a href="#c{c.id}"><circle cx="{p.x:.1f}" cy="{p.y:.1f}" r="{NODE_R}" fill="{_colour(c)}"{stroke}>'
            f"<title>{_esc(title)}</title></circle>"
            f'<text x="{p.x:.1f}" y="{p.y + NODE_R + 11:.1f}" font-size="9" text-anchor="middle">{c.id}</text></a>'
        )
    parts.append("</svg>")
    return "".join(parts)


def speedup_svg(candidates: list[CandidateRecord], width: int = 640, height: int = 260) -> str:
    """Each evaluated candidate's speedup (0 when rejected) in evaluation order, and the best so far."""
    evaluated = sorted(
        (c for c in candidates if c.status == "evaluated"), key=lambda c: (c.evaluated_at or "", c.id)
    )
    if not evaluated:
        return "<p>Nothing evaluated yet.</p>"
    values = [c.speedup if c.verdict == "correct" and c.speedup is not None else 0.0 for c in evaluated]
    top = max(max(values), 1.0) * 1.1
    left, right, bottom, up = 48, 12, 32, 12
    plot_w, plot_h = width - left - right, height - bottom - up

    def xy(i: int, v: float) -> tuple[float, float]:
        x = left + (plot_w * i / max(len(values) - 1, 1))
        return x, up + plot_h * (1 - v / top)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="speedup over steps">',
        f'<rect x="{left}" y="{up}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#ccc"/>',
    ]
    for tick in (0.0, 1.0, top / 1.1):
        _, y = xy(0, tick)
        parts.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + plot_w}" y2="{y:.1f}" stroke="#eee"/>')
        parts.append(
            f'<text x="{left - 6}" y="{y + 3:.1f}" font-size="10" text-anchor="end">{tick:.2f}x</text>'
        )
    best_line, best = [], 0.0
    for i, v in enumerate(values):
        best = max(best, v)
        best_line.append("{:.1f},{:.1f}".format(*xy(i, best)))
    parts.append(
        f'<polyline points="{" ".join(best_line)}" fill="none" stroke="{CORRECT}" stroke-width="2"/>'
    )
    for i, (c, v) in enumerate(zip(evaluated, values, strict=True)):
        x, y = xy(i, v)
        parts.append(
            f'<a href="#c{c.id}"><circle cx="{x:.1f}" cy="{y:.1f}" r="3.5" fill="{_colour(c)}">'
            f"<title>{_esc(f'step {i + 1}: #{c.id} {_label(c)}')}</title></circle></a>"
        )
    parts.append(
        f'<text x="{left + plot_w / 2}" y="{height - 6}" font-size="11" text-anchor="middle">'
        "evaluation step (line: best so far)</text></svg>"
    )
    return "".join(parts)


def _diff_html(diff: str) -> str:
    lines = []
    for line in diff.splitlines():
        cls = "add" if line.startswith("+") and not line.startswith("+++") else ""
        cls = "del" if line.startswith("-") and not line.startswith("---") else cls
        cls = "hunk" if line.startswith("@@") else cls
        lines.append(f'<span class="{cls}">{_esc(line)}</span>' if cls else _esc(line))
    return "\n".join(lines)


def _node_section(c: CandidateRecord, best_id: int | None) -> str:
    badge = " <strong>(best)</strong>" if c.id == best_id else ""
    rows = [
        ("operator", c.operator),
        ("parent", f"#{c.parent_id}" if c.parent_id is not None else "draft"),
        ("note", c.note or "-"),
        ("status", _label(c)),
        ("timing", c.timing_kind or "-"),
        ("device", c.device or "-"),
    ]
    if c.speedup_vs_eager is not None:
        rows.append(("vs eager", f"{c.speedup_vs_eager:.2f}x"))
    if c.speedup_vs_compile is not None:
        rows.append(("vs torch.compile", f"{c.speedup_vs_compile:.2f}x"))
    if c.roofline_fraction is not None:
        rows.append(("roofline fraction", f"{c.roofline_fraction:.2f}"))
    table = "".join(f"<tr><th>{_esc(k)}</th><td>{_esc(v)}</td></tr>" for k, v in rows)
    reason = f'<p class="reason">{_esc(c.reason)}</p>' if c.reason and c.verdict != "correct" else ""
    return (
        f'<section id="c{c.id}"><h3><span class="dot" style="background:{_colour(c)}"></span>'
        f"Candidate {c.id}{badge}</h3><table>{table}</table>{reason}"
        f"<details><summary>diff</summary><pre>{_diff_html(c.diff)}</pre></details></section>"
    )


STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#222;max-width:1100px}
h1{font-size:20px} h2{font-size:16px;margin-top:28px} h3{font-size:14px;margin:18px 0 4px}
table{border-collapse:collapse} th{text-align:left;padding:1px 12px 1px 0;color:#555;font-weight:normal}
pre{background:#f7f7f7;padding:8px;overflow-x:auto;font-size:12px}
.add{color:#116611;background:#e6ffe6}.del{color:#991111;background:#ffe6e6}.hunk{color:#555}
.reason{color:#a00;white-space:pre-wrap;font-family:monospace;font-size:12px}
.banner{background:#fff3cd;border:1px solid #e0c060;padding:6px 10px}
.dot{display:inline-block;width:10px;height:10px;border-radius:50%;margin-right:6px}
.scroll{overflow-x:auto;border:1px solid #eee}
"""


def _legend() -> str:
    items = [("correct", CORRECT), ("pending", PENDING)] + [
        (f"rejected: {k}", v) for k, v in STAGE_COLOURS.items()
    ]
    return " ".join(
        f'<span><span class="dot" style="background:{c}"></span>{_esc(n)}</span>' for n, c in items
    )


def render_report(history: History, run_id: int) -> str:
    run = history.get_run(run_id)
    if run is None:
        raise ReportError(f"no run {run_id} in {history.path}")
    candidates = history.list_candidates(run_id)
    best_id = run.best_candidate_id
    if best_id is None:
        best = history.best_candidate(run_id)
        best_id = best.id if best is not None else None
    notices = [
        (str(e["payload"].get("level", "info")), str(e["payload"].get("message", "")))
        for e in history.list_events(run_id)
        if e["kind"] == "notice"
    ]
    return _page(run, candidates, best_id, notices)


def _page(
    run: RunRecord, candidates: list[CandidateRecord], best_id: int | None, notices: list[tuple[str, str]]
) -> str:
    evaluated = [c for c in candidates if c.status == "evaluated"]
    correct = [c for c in evaluated if c.verdict == "correct"]
    best = next((c for c in candidates if c.id == best_id), None)
    summary = [
        ("problem", run.problem_path),
        ("strategy", run.strategy or "-"),
        ("status", f"{run.status}: {run.reason}" if run.reason else run.status),
        ("device", run.device),
        ("timing", run.timing_kind or "-"),
        ("candidates", f"{len(candidates)} proposed, {len(evaluated)} evaluated, {len(correct)} correct"),
        ("best", f"#{best.id} {_label(best)}" if best is not None else "none"),
        ("started", run.created_at),
        ("finished", run.finished_at or "-"),
    ]
    banner = ""
    if run.timing_kind == "modelled":
        banner = (
            '<p class="banner">Modelled timing: speedups come from a roofline model of the Triton '
            "interpreter's memory traffic and FLOPs, not from a GPU measurement.</p>"
        )
    rows = "".join(f"<tr><th>{_esc(k)}</th><td>{_esc(v)}</td></tr>" for k, v in summary)
    notes = ""
    if notices:
        items = "".join(f"<li><b>{_esc(level)}</b>: <pre>{_esc(msg)}</pre></li>" for level, msg in notices)
        notes = f"<h2>Notices</h2><ul>{items}</ul>"
    nodes = "".join(_node_section(c, best_id) for c in candidates)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>kernelevolve run {run.id}</title><style>{STYLE}</style></head><body>"
        f"<h1>kernelevolve run {run.id}</h1>{banner}<table>{rows}</table>{notes}"
        f'<h2>Search tree</h2><p>{_legend()}</p><div class="scroll">{tree_svg(candidates, best_id)}</div>'
        f"<h2>Speedup over steps</h2>{speedup_svg(candidates)}"
        f"<h2>Candidates</h2>{nodes}</body></html>\n"
    )
