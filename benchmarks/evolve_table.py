"""Tabulate `kernelevolve evolve --json` runs with their first draft, from the run's history file.

Usage: python3 benchmarks/evolve_table.py OUTDIR   (as benchmarks/cpu_evolve.sh leaves it)
Columns: the first correct candidate's speedup (the first draft), the best one, eager and
torch.compile baselines of the best (geomean over timed sets), candidates, wall time.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path


def _fmt(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def render(folder: Path) -> str:
    db = sqlite3.connect(folder / "history.db")
    rows = [
        "| example | timing | first draft (vs best baseline) | best | best vs eager | best vs compile | "
        "improved by | candidates | correct | wall s | per minute |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for path in sorted(folder.glob("evolve_*.json")):
        text = path.read_text().strip()
        if not text:
            continue
        data = json.loads(text)
        run = data["run_id"]
        first = db.execute(
            "select speedup from candidates where run_id=? and verdict='correct' order by id limit 1", (run,)
        ).fetchone()
        correct = db.execute(
            "select count(*) from candidates where run_id=? and verdict='correct'", (run,)
        ).fetchone()[0]
        best = data.get("best") or {}
        first_speedup = first[0] if first else None
        gain = best.get("speedup") / first_speedup if best.get("speedup") and first_speedup else None
        rows.append(
            f"| {path.stem.removeprefix('evolve_')} | {best.get('timing', '–')} | {_fmt(first_speedup)}× | "
            f"{_fmt(best.get('speedup'))}× | {_fmt(best.get('speedup_vs_eager'))}× | "
            f"{_fmt(best.get('speedup_vs_compile'))}× | {_fmt(gain)}× | {data['evaluated']} | {correct} | "
            f"{data.get('wall_s', 0):.0f} | {_fmt(data.get('throughput'))} |"
        )
    return "\n".join(rows)


if __name__ == "__main__":
    print(render(Path(sys.argv[1])))
