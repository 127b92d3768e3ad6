"""Tabulate `kernelevolve evolve --json` runs with their first draft, from the run's history file.

Usage: python3 benchmarks/evolve_table.py OUTDIR   (as benchmarks/cpu_evolve.sh leaves it)
       python3 benchmarks/evolve_table.py OUTDIR --dump   (also write OUTDIR/candidates.json)
Reads OUTDIR/history.db (read-only) when present, else OUTDIR/candidates.json, the committed
dump of the candidates table next to the runs' JSON (docs/data/cpu-2026-12-02/).
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


COLUMNS = ("id", "run_id", "parent_id", "operator", "step", "verdict", "stage", "reason", "speedup",
           "speedup_vs_eager", "speedup_vs_compile", "fitness", "timing_kind", "device", "note")  # fmt: skip


def load_candidates(folder: Path, dump: bool = False) -> list[dict[str, object]]:
    db_file = folder / "history.db"
    if not db_file.exists():
        return list(json.loads((folder / "candidates.json").read_text()))
    db = sqlite3.connect(f"file:{db_file}?mode=ro", uri=True)
    rows = [dict(zip(COLUMNS, r, strict=True)) for r in db.execute(
        f"select {', '.join(COLUMNS)} from candidates order by id")]  # fmt: skip
    if dump:
        (folder / "candidates.json").write_text(json.dumps(rows, indent=1))
    return rows


def render(folder: Path, dump: bool = False) -> str:
    candidates = load_candidates(folder, dump)
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
        correct_rows = [c for c in candidates if c["run_id"] == run and c["verdict"] == "correct"]
        correct = len(correct_rows)
        best = data.get("best") or {}
        first_speedup = correct_rows[0]["speedup"] if correct_rows else None
        gain = best.get("speedup") / first_speedup if best.get("speedup") and first_speedup else None
        rows.append(
            f"| {path.stem.removeprefix('evolve_')} | {best.get('timing', '–')} | {_fmt(first_speedup)}× | "
            f"{_fmt(best.get('speedup'))}× | {_fmt(best.get('speedup_vs_eager'))}× | "
            f"{_fmt(best.get('speedup_vs_compile'))}× | {_fmt(gain)}× | {data['evaluated']} | {correct} | "
            f"{data.get('wall_s', 0):.0f} | {_fmt(data.get('throughput'))} |"
        )
    return "\n".join(rows)


if __name__ == "__main__":
    print(render(Path(sys.argv[1]), dump="--dump" in sys.argv[2:]))
