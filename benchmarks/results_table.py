"""Render `kernelevolve eval --json` outputs (as gpu_run.sh collects them) into a Markdown table.

Usage: python3 benchmarks/results_table.py docs/data/h200-2026-12-02/eval_*.json
Per example: the geometric-mean speedups over every timed input set, then each production
(`benchmark:*`) set on its own, since small sets are launch-overhead bound.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def _fmt(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def render(paths: list[Path]) -> str:
    rows = [
        "| example | input set | shapes | eager ms | compile ms | ours ms | vs eager | vs compile | "
        "vs best | roofline fraction |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for path in paths:
        data = json.loads(path.read_text())
        name = path.stem.removeprefix("eval_")
        rows.append(
            f"| **{name}** | geomean of {len(data['timings'])} sets | | | | | "
            f"{_fmt(data['speedup_vs_eager'])}× | {_fmt(data['speedup_vs_compile'])}× | "
            f"{_fmt(data['speedup'])}× | {_fmt(data['roofline_fraction'], 4)} |"
        )
        for t in data["timings"]:
            if not t["input_set"].startswith("benchmark"):
                continue
            shapes = " ".join("x".join(map(str, s)) for s in t["shapes"])
            rows.append(
                f"| {name} | {t['input_set']} | {shapes} | {_fmt(t['eager_ms'], 4)} | "
                f"{_fmt(t['compile_ms'], 4)} | {_fmt(t['candidate_ms'], 4)} | {_fmt(t['speedup_vs_eager'])}× | "
                f"{_fmt(t['speedup_vs_compile'])}× | {_fmt(t['speedup'])}× | {_fmt(t['roofline_fraction'], 3)} |"
            )
    return "\n".join(rows)


if __name__ == "__main__":
    print(render([Path(p) for p in sys.argv[1:]]))
