"""Check a generated dispatcher on the GPU: per input set, the path it takes, its time against eager
PyTorch and torch.compile, and whether its output matches the eager Model.

Usage: python3 benchmarks/dispatch_check.py PROBLEM DISPATCH_FILE [--json OUT.json]

PROBLEM is the problem file (KernelBench format), DISPATCH_FILE the ``<stem>_dispatch.py`` that
``kernelevolve evolve`` wrote for it. Input sets: one per shape-and-dtype bucket of seed 0's
``get_inputs()``, ``get_test_inputs()`` and ``get_benchmark_inputs()``, built by the harness's own
``build_input_sets`` (search/inputs.py), so they are the buckets the evaluation measured.

Per set, eager ``Model``, ``torch.compile(Model)`` (default mode) and ``Dispatch`` are warmed
(compiles happen there, untimed; Dispatch compiles its torch.compile paths on first use) and then
timed by the harness's routine: ``search/timing.py``'s ``measure`` with its L2 flusher, at
``EvalConfig``'s default warm-up and repetition times, as ``search/perf.py`` times a candidate.
Dispatch's output is compared with the eager Model's by the harness's ``compare_outputs`` and the
problem's ATOL/RTOL. Speedup after dispatch = min(eager, compile) / dispatch, on medians.

Prints a table (one row per set) and the minimum speedup over the sets; ``--json`` writes the same
with the environment fingerprint. Asserts nothing: it reports figures. Exits 2 without CUDA.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path
from types import ModuleType
from typing import Any

NO_CUDA_EXIT = 2


def input_sets(problem: ModuleType) -> list[Any]:
    """Every bucket the harness times: seed 0's get_inputs(), each test set of a new shape and dtype,
    and every get_benchmark_inputs() set, so each bucket the dispatcher has evidence for is checked."""
    from kernelevolve.search.inputs import build_input_sets

    chosen: dict[str, Any] = {}
    for s in build_input_sets(problem, (0,), "cuda"):
        chosen.setdefault(repr((s.shapes, s.dtypes)), s)
    return list(chosen.values())


def chosen_path(dispatch_module: ModuleType, args: list[Any]) -> str:
    choose = getattr(dispatch_module, "choose_path", None)
    if choose is not None:
        return str(choose(tuple(args)))
    return "kernel" if dispatch_module.use_kernel(tuple(args)) else "eager"  # an older dispatcher


def build_models(problem: ModuleType, dispatch_module: ModuleType, notes: list[str]) -> tuple[Any, Any]:
    """The eager Model and Dispatch, built as the harness builds models (seed 0), with equal weights."""
    from kernelevolve.search.inputs import seed_everything

    seed_everything(0)
    init = list(problem.get_init_inputs())
    seed_everything(0)
    eager = problem.Model(*init)
    seed_everything(0)
    dispatch = dispatch_module.Dispatch(*init)
    state = eager.state_dict()
    if state:
        try:
            dispatch.reference.load_state_dict(state)  # shared with the kernel where names match
        except Exception as exc:  # noqa: BLE001 - reported: outputs may then differ
            notes.append(f"Dispatch's Model did not take the eager Model's weights: {exc}")
    return eager.to("cuda").eval(), dispatch.to("cuda").eval()


def check_set(
    s: Any, eager: Any, compiled: Any, dispatch: Any, dispatch_module: ModuleType, problem: ModuleType
) -> dict[str, Any]:
    import torch
    from kernelevolve.search import timing
    from kernelevolve.search.config import EvalConfig
    from kernelevolve.search.correctness import compare_outputs, detached_copy
    from kernelevolve.search.inputs import fresh_copy

    config = EvalConfig()
    notes: list[str] = []
    args = fresh_copy(s.args)
    path = chosen_path(dispatch_module, args)
    flush = timing.L2Flusher()

    def timed(what: str, fn: Any) -> dict[str, Any] | None:
        failure = timing.warm(fn)  # torch.compile compiles here, outside any timed region
        if failure is not None:
            notes.append(f"{what} skipped: {failure}")
            return None
        m = timing.measure(fn, warmup_ms=config.warmup_ms, rep_ms=config.rep_ms, flush=flush)
        notes.extend(f"{what}: {note}" for note in m.notes)
        if m.integrity_issue:
            notes.append(f"{what} timing flagged: {m.integrity_issue}")
        return asdict(m.stats)

    with torch.no_grad():
        ref = detached_copy(eager(*fresh_copy(s.args)))
        out = detached_copy(dispatch(*fresh_copy(s.args)))  # the first call: compiles on a compile path
        torch.cuda.synchronize()
        cmp = compare_outputs(out, ref, getattr(problem, "ATOL", None), getattr(problem, "RTOL", None))
        eager_stats = timed("eager", lambda: eager(*args))
        compile_stats = timed("torch.compile", lambda: compiled(*args)) if compiled is not None else None
        dispatch_stats = timed("Dispatch", lambda: dispatch(*args))
    failure = getattr(dispatch, "compile_failures", {}).get(path)
    if failure is not None:
        notes.append(f"Dispatch's torch.compile for {path!r} failed, so it ran the eager Model: {failure}")
    baselines = [st["median_ms"] for st in (eager_stats, compile_stats) if st is not None]
    speedup = None
    if baselines and dispatch_stats is not None:
        speedup = min(baselines) / max(dispatch_stats["median_ms"], 1e-12)
    return {
        "input_set": s.name,
        "shapes": s.shapes,
        "dtypes": s.dtypes,
        "path": path,
        "ran": path if failure is None else "eager",
        "eager_ms": eager_stats["median_ms"] if eager_stats else None,
        "compile_ms": compile_stats["median_ms"] if compile_stats else None,
        "dispatch_ms": dispatch_stats["median_ms"] if dispatch_stats else None,
        "speedup_after_dispatch": speedup,
        "output_matches": cmp.passed,
        "max_abs_err": cmp.max_abs_err,
        "mismatch": cmp.reason,
        "eager": eager_stats,
        "compile": compile_stats,
        "dispatch": dispatch_stats,
        "notes": notes,
    }


def _ms(value: float | None) -> str:
    return "–" if value is None else f"{value:.4f}"


def render(report: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    if not console.is_terminal:  # a log file: wide enough that no column is cut
        console = Console(width=200)
    table = Table(title=f"Dispatch check on {report['fingerprint']['device']}: {report['dispatch_file']}")
    columns = (
        "set",
        "shapes",
        "dtypes",
        "path",
        "eager ms",
        "compile ms",
        "dispatch ms",
        "speedup after dispatch",
        "output",
    )
    for column in columns:
        table.add_column(column, justify="right" if column.endswith(("ms", "dispatch")) else "left")
    for row in report["sets"]:
        speedup = row["speedup_after_dispatch"]
        table.add_row(
            row["input_set"],
            ", ".join("x".join(map(str, shape)) or "()" for shape in row["shapes"]),
            ", ".join(dict.fromkeys(row["dtypes"])),
            row["path"] if row["ran"] == row["path"] else f"{row['path']} -> eager (compile failed)",
            _ms(row["eager_ms"]),
            _ms(row["compile_ms"]),
            _ms(row["dispatch_ms"]),
            "–" if speedup is None else f"{speedup:.3f}x",
            "matches" if row["output_matches"] else f"MISMATCH: {row['mismatch']}",
        )
    console.print(table)
    low = report["min_speedup_after_dispatch"]
    if low is None:
        console.print("minimum speedup after dispatch: none measured")
    else:
        console.print(
            f"minimum speedup after dispatch, min(eager, compile) / dispatch: {low:.3f}x "
            f"({report['min_speedup_set']}, {len(report['sets'])} set(s))"
        )
    for row in report["sets"]:
        for note in row["notes"]:
            console.print(f"note: {row['input_set']}: {note}", highlight=False)
    for note in report["notes"]:
        console.print(f"note: {note}", highlight=False)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("problem", type=Path, help="the problem file (Model, get_inputs, get_init_inputs)")
    parser.add_argument("dispatch_file", type=Path, help="the <stem>_dispatch.py written for it")
    parser.add_argument("--json", type=Path, metavar="OUT.json", help="also write the figures here")
    args = parser.parse_args(argv)

    import torch

    if not torch.cuda.is_available():
        print(
            "dispatch_check: no CUDA device is visible (torch.cuda.is_available() is False); "
            "it times on a GPU only, nothing was measured",
            file=sys.stderr,
        )
        return NO_CUDA_EXIT

    from kernelevolve.knowledge.hardware import match_device
    from kernelevolve.search import timing
    from kernelevolve.search.fingerprint import collect
    from kernelevolve.search.worker import import_file

    problem = import_file("_dispatch_check_problem", args.problem.resolve())
    dispatch_module = import_file("_dispatch_check_dispatch", args.dispatch_file.resolve())
    notes: list[str] = []
    own_problem = Path(getattr(dispatch_module, "PROBLEM_FILE", args.problem)).resolve()
    if own_problem != args.problem.resolve():
        notes.append(f"the dispatcher was generated for {own_problem}, not {args.problem.resolve()}")
    evidence = getattr(dispatch_module, "EVIDENCE", {})
    device_name = torch.cuda.get_device_name()
    if evidence.get("device") != device_name:
        notes.append(
            f"the evidence was measured on {evidence.get('device')!r}, this is {device_name!r}: "
            "the dispatcher runs the eager Model everywhere"
        )
    eager, dispatch = build_models(problem, dispatch_module, notes)
    compiled, reason = timing.compile_module(eager, None)
    if reason:
        notes.append(reason)
    rows = [check_set(s, eager, compiled, dispatch, dispatch_module, problem) for s in input_sets(problem)]
    measured = [r for r in rows if r["speedup_after_dispatch"] is not None]
    lowest = min(measured, key=lambda r: r["speedup_after_dispatch"]) if measured else None
    hw = match_device(device_name)
    report = {
        "problem": str(args.problem),
        "dispatch_file": str(args.dispatch_file),
        "evidence_run_id": evidence.get("run_id"),
        "evidence_candidate_id": evidence.get("candidate_id"),
        "evidence_device": evidence.get("device"),
        "baselines": ["eager", "compile"],
        "min_speedup_after_dispatch": lowest["speedup_after_dispatch"] if lowest else None,
        "min_speedup_set": lowest["input_set"] if lowest else None,
        "all_outputs_match": all(r["output_matches"] for r in rows),
        "sets": rows,
        "notes": notes,
        "fingerprint": asdict(collect("cuda", hw.name if hw else None)),
    }
    render(report)
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=1, default=str) + "\n")
        print(f"wrote {args.json}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
