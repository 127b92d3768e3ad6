"""In-process check of a generated candidate against its problem (our own generated code, tests only)."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

os.environ.setdefault("TRITON_INTERPRET", "1")

import torch


def load_module(path: Path, name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def input_sets(problem: Any) -> list[list[Any]]:
    sets = []
    for seed in (0, 1):
        torch.manual_seed(seed)
        sets.append(list(problem.get_inputs()))
    if hasattr(problem, "get_test_inputs"):
        torch.manual_seed(7)
        sets += [list(s) for s in problem.get_test_inputs()]
    return sets


def tolerance(problem: Any, dtype: torch.dtype) -> tuple[float, float]:
    name = str(dtype).removeprefix("torch.")
    default = 1e-2 if name in ("float16", "bfloat16") else 1e-4
    tols = []
    for attr in ("ATOL", "RTOL"):
        value = getattr(problem, attr, default)
        tols.append(float(value.get(name, default)) if isinstance(value, dict) else float(value))
    return tols[0], tols[1]


def check_candidate(
    problem_path: Path, candidate_source: str, tmp: Path, atol: float = 1e-4, rtol: float = 1e-4
) -> int:
    """Run ModelNew against Model on every input set; returns the number of sets checked."""
    problem = load_module(problem_path, f"_p_{problem_path.stem}")
    cand_path = tmp / f"cand_{problem_path.stem}_{abs(hash(candidate_source))}.py"
    cand_path.write_text(candidate_source)
    cand = load_module(cand_path, cand_path.stem)
    torch.manual_seed(0)
    ref = problem.Model(*problem.get_init_inputs()).eval()
    torch.manual_seed(0)
    new = cand.ModelNew(*problem.get_init_inputs()).eval()
    new.load_state_dict(ref.state_dict())
    sets = input_sets(problem)
    for inputs in sets:
        with torch.no_grad():
            want = ref(*[x.clone() if isinstance(x, torch.Tensor) else x for x in inputs])
            got = new(*inputs)
        wants = want if isinstance(want, tuple | list) else [want]
        gots = got if isinstance(got, tuple | list) else [got]
        assert len(wants) == len(gots)
        for w, g in zip(wants, gots, strict=True):
            assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, w.shape, g.dtype, w.dtype)
            atol, rtol = tolerance(problem, w.dtype)
            torch.testing.assert_close(g, w, atol=atol, rtol=rtol)
    return len(sets)
