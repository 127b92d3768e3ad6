"""Evaluate the bundled examples and the adversarial corpus on one device; one line per candidate.

    python tests/harness_fixtures/run_corpora.py [--device cuda] [--no-static] [--skip-timing]

Not a test: a smoke run for a GPU machine (the tests pin the behaviour; this shows it at scale).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from kernelevolve.search.config import EvalConfig
from kernelevolve.search.harness import evaluate

ROOT = Path(__file__).resolve().parents[2]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="auto")
    ap.add_argument("--no-static", action="store_true")
    ap.add_argument("--skip-timing", action="store_true")
    ap.add_argument("--only", choices=["examples", "adversarial"], default=None)
    args = ap.parse_args()
    config = EvalConfig(device=args.device, static_checks=not args.no_static, skip_timing=args.skip_timing)
    jobs: list[tuple[Path, Path]] = []
    if args.only in (None, "examples"):
        jobs += [
            (d / "problem.py", d / "candidate.py")
            for d in sorted((ROOT / "examples").iterdir())
            if d.is_dir()
        ]
    if args.only in (None, "adversarial"):
        adv = ROOT / "tests" / "adversarial"
        jobs += [(adv / "problem.py", c) for c in sorted(adv.glob("*.py")) if c.name != "problem.py"]
    for problem, candidate in jobs:
        start = time.monotonic()
        r = evaluate(problem, candidate.read_text(), config, candidate_name=candidate.name)
        s = r.summary()
        label = f"{candidate.parent.name}/{candidate.name}"
        speed = f"x{s['speedup']:.2f} eager x{s['speedup_vs_eager'] or 0:.2f}" if s["speedup"] else ""
        print(
            f"{label:42s} {s['verdict']:9s} {s['stage']:12s} {s['timing'] or '-':9s} {speed:22s} "
            f"{time.monotonic() - start:5.1f}s {(r.reason or '')[:160]}",
            flush=True,
        )
        if r.warnings:
            print(f"{'':42s} warnings: {r.warnings}", flush=True)


if __name__ == "__main__":
    main()
