"""Render `kernelevolve eval --json` outputs (as gpu_run.sh collects them) into a Markdown table.

Usage: python3 benchmarks/results_table.py docs/data/h200-2026-12-02/eval_*.json
Per example: the geometric mean over the production (`benchmark:*`) sets, which is the headline
the CLI reports now, then the geometric mean over every timed set (small test shapes included,
launch-bound), then each production set on its own. Everything is recomputed from the per-set
timings in the JSON, so the table does not depend on which aggregate the CLI printed.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any


def _fmt(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _geomean(values: list[float | None]) -> float | None:
    if not values or any(v is None or v <= 0 for v in values):
        return None
    return math.exp(sum(math.log(v) for v in values if v is not None) / len(values))


def _aggregate(label: str, name: str, sets: list[dict[str, Any]]) -> str:
    def mean(key: str) -> float | None:
        return _geomean([t[key] for t in sets])

    return (
        f"| **{name}** | {label} | | | | | {_fmt(mean('speedup_vs_eager'))}× | "
        f"{_fmt(mean('speedup_vs_compile'))}× | {_fmt(mean('speedup'))}× | {_fmt(mean('roofline_fraction'), 3)} |"
    )


def render(paths: list[Path]) -> str:
    rows = [
        "| example | input sets | shapes | eager ms | compile ms | ours ms | vs eager | vs compile | "
        "vs best | roofline fraction |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for path in paths:
        data = json.loads(path.read_text())
        name = path.stem.removeprefix("eval_")
        timings = data["timings"]
        production = [t for t in timings if t["input_set"].startswith("benchmark")]
        rows.append(_aggregate(f"geomean, {len(production)} production sets", name, production))
        rows.append(_aggregate(f"geomean, all {len(timings)} sets", name, timings))
        for t in production:
            shapes = " ".join("x".join(map(str, s)) for s in t["shapes"])
            rows.append(
                f"| {name} | {t['input_set']} | {shapes} | {_fmt(t['eager_ms'], 4)} | "
                f"{_fmt(t['compile_ms'], 4)} | {_fmt(t['candidate_ms'], 4)} | {_fmt(t['speedup_vs_eager'])}× | "
                f"{_fmt(t['speedup_vs_compile'])}× | {_fmt(t['speedup'])}× | {_fmt(t['roofline_fraction'], 3)} |"
            )
    return "\n".join(rows)


if __name__ == "__main__":
    print(render([Path(p) for p in sys.argv[1:]]))
