"""Why does the harness time torch.compile on gemm_epilogue slower than a plain process does?

On the H200 the harness worker measured torch.compile(Model) at 0.165/0.593 ms on gemm_epilogue's
production sets, while benchmarks/dispatch_check.py measured a fresh torch.compile of the same
Model at 0.106/0.359 ms (docs/results.md §2). This runs the compile baseline four ways, each in a
fresh process, and prints the production-set medians:

  plain      warm + timing.measure per set, in the harness's set order (what dispatch_check does)
  perf       perf.time_input_set per set, as the worker's TIMING stage calls it
  env        perf, with the worker's environment (one Inductor compile thread, fresh caches)
  harness    perf, after the worker's set-up: launch interceptor, poisoned allocator, correctness runs

Usage on the GPU machine: python3 benchmarks/compile_baseline_probe.py [PROBLEM]
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

VARIANTS = ("plain", "perf", "harness", "env")


def child(variant: str, problem_path: Path) -> dict[str, float]:
    import torch
    from kernelevolve.search import timing
    from kernelevolve.search.config import EvalConfig
    from kernelevolve.search.inputs import build_input_sets, fresh_copy, seed_everything
    from kernelevolve.search.perf import time_input_set
    from kernelevolve.search.worker import load_problem

    problem = load_problem(problem_path)
    seed_everything(0)
    model = problem.Model(*problem.get_init_inputs()).to("cuda").eval()
    sets = build_input_sets(problem, (0,), "cuda")
    seen: dict[str, object] = {}
    for s in sets:
        seen.setdefault(repr((s.shapes, s.dtypes)), s)
    timed = list(seen.values())
    config = EvalConfig()
    if variant == "harness":
        from kernelevolve.search.ghost import LaunchInterceptor, poison_allocator

        LaunchInterceptor().install()
        for s in sets:
            with torch.no_grad():
                out = model(*fresh_copy(s.args))
            poison_allocator("cuda", [out.numel() * out.element_size()])
    result: dict[str, float] = {}
    if variant == "plain":
        compiled, _ = timing.compile_module(model, None)
        flush = timing.L2Flusher()
        with torch.no_grad():
            for s in timed:
                call = functools.partial(compiled, *fresh_copy(s.args))
                timing.warm(call)
                m = timing.measure(call, flush=flush)
                result[s.name] = m.stats.median_ms
    else:
        for s in timed:
            t = time_input_set(s.name, model, model, fresh_copy(s.args), config, "cuda")
            result[s.name] = t.compile.median_ms if t.compile else float("nan")
    return {k: v for k, v in result.items() if k.startswith("benchmark:")}


def main() -> int:
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        print(json.dumps(child(sys.argv[2], Path(sys.argv[3]))))
        return 0
    problem = Path(sys.argv[1] if len(sys.argv) > 1 else "examples/gemm_epilogue/problem.py").resolve()
    report: dict[str, object] = {}
    for variant in VARIANTS:
        env = dict(os.environ)
        if variant in ("env", "harness"):
            scratch = tempfile.mkdtemp(prefix="probe-")
            env.update(
                TORCHINDUCTOR_COMPILE_THREADS="1",
                TORCHINDUCTOR_CACHE_DIR=f"{scratch}/inductor",
                TRITON_CACHE_DIR=f"{scratch}/triton",
                OMP_NUM_THREADS="8",
            )
        proc = subprocess.run(
            [sys.executable, __file__, "--child", variant, str(problem)],
            capture_output=True, text=True, env=env, timeout=75, check=False,
        )  # fmt: skip
        lines = proc.stdout.strip().splitlines()
        report[variant] = json.loads(lines[-1]) if proc.returncode == 0 and lines else proc.stderr[-800:]
        print(variant, report[variant], flush=True)
    out = os.environ.get("OUT")
    if out:
        Path(out, "compile_baseline_probe.json").write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
