"""The H200 evolve table of docs/results.md §2, from what benchmarks/gpu_run.sh brought back.

Usage: python3 benchmarks/gpu_evolve_table.py FOLDER [--dump HISTORY_DB]
FOLDER holds results-*.json (gpu_run.sh's folded outputs: evolve_X, dispatch_X) and
candidates.json; ``--dump HISTORY_DB`` first writes candidates.json from the returned history
file (every candidate with its per-set timings, GPU wait and duration), so the table can be
rebuilt from the committed folder alone. Times are medians in ms on the production-size
``get_benchmark_inputs()`` sets of the best candidate; speedups are the search's headline
(geomean over those sets against the best baseline).
"""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path
from typing import Any


def dump(db_file: Path, folder: Path) -> None:
    db = sqlite3.connect(f"file:{db_file}?mode=ro", uri=True)
    db.row_factory = sqlite3.Row
    rows = []
    for r in db.execute("select * from candidates order by id"):
        result = json.loads(r["result"]) if r["result"] else {}
        rows.append(
            {
                "id": r["id"], "run_id": r["run_id"], "parent_id": r["parent_id"], "operator": r["operator"],
                "note": r["note"], "verdict": r["verdict"], "stage": r["stage"], "reason": r["reason"],
                "speedup": r["speedup"], "speedup_vs_eager": r["speedup_vs_eager"],
                "speedup_vs_compile": r["speedup_vs_compile"], "roofline_fraction": r["roofline_fraction"],
                "timing_kind": r["timing_kind"], "device": r["device"],
                "duration_s": result.get("duration_s"), "gpu_wait_s": result.get("gpu_wait_s"),
                "gpu_exclusive_s": result.get("gpu_exclusive_s"), "timings": result.get("timings", []),
                "fingerprint": result.get("fingerprint"),
            }
        )  # fmt: skip
    (folder / "candidates.json").write_text(json.dumps(rows, indent=1))


def _ms(timing: dict[str, Any], key: str) -> str:
    stats = timing.get(key)
    return "–" if not stats else f"{stats['median_ms']:.4f}"


def _x(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}×"


def render(folder: Path) -> str:
    results: dict[str, Any] = {}
    for path in sorted(folder.glob("results-*.json")):
        results.update(json.loads(path.read_text()))
    candidates = {c["id"]: c for c in json.loads((folder / "candidates.json").read_text())}
    lines = [
        "| example | input set | eager ms | torch.compile ms | ours ms | ours vs best baseline | "
        "after dispatch | roofline fraction | candidates (correct) | search s | per GPU-minute |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for key in sorted(k for k in results if k.startswith("evolve_")):
        name = key.removeprefix("evolve_")
        run = results[key]
        best = run.get("best") or {}
        cand = candidates.get(best.get("candidate_id"), {})
        in_run = [c for c in candidates.values() if c["run_id"] == run["run_id"]]
        correct = sum(1 for c in in_run if c["verdict"] == "correct")
        after = {r["input_set"]: r for r in (results.get(f"dispatch_{name}") or {}).get("sets", [])}
        for i, t in enumerate(s for s in cand.get("timings", []) if s["input_set"].startswith("benchmark:")):
            speed = min(t["eager"]["median_ms"], *(t[k]["median_ms"] for k in ("compile",) if t.get(k)))
            own = speed / t["candidate"]["median_ms"]
            d = after.get(t["input_set"], {})
            dispatched = f"{_x(d.get('speedup_after_dispatch'))} ({d.get('path', '?')})" if d else "–"
            floor = (t.get("roofline") or {}).get("floor_ms")
            roof = floor / t["candidate"]["median_ms"] if floor else None
            head = (
                f"| {name} | {t['input_set']} {t['shapes']} |"
                if i
                else f"| **{name}** | {t['input_set']} {t['shapes']} |"
            )
            tail = (
                f" {in_run and len(in_run)} ({correct}) | {run.get('wall_s', 0):.0f} | {run.get('throughput', 0):.1f} |"
                if i == 0
                else " | | |"
            )
            lines.append(
                f"{head} {_ms(t, 'eager')} | {_ms(t, 'compile')} | {_ms(t, 'candidate')} | {_x(own)} | "
                f"{dispatched} | {'–' if roof is None else f'{roof:.2f}'} |{tail}"
            )
        lines.append(
            f"| {name} headline | geomean | | | | {_x(best.get('speedup'))} | | "
            f"{_x(best.get('roofline_fraction')).removesuffix('×')} | | | |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    target = Path(sys.argv[1])
    if "--dump" in sys.argv[2:]:
        dump(Path(sys.argv[sys.argv.index("--dump") + 1]), target)
    print(render(target))
