"""The bundled examples are honest and complete: every candidate is accepted end to end by the
real harness (sandboxed worker, CPU interpreter, modelled timing), and every problem carries the
documented extensions (odd-size test sets, production-size benchmark sets)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from kernelevolve.search.config import EvalConfig
from kernelevolve.search.harness import evaluate
from kernelevolve.search.problem import check_candidate_source, check_problem_source
from kernelevolve.search.results import Stage, TimingKind, Verdict

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
NAMES = sorted(p.parent.name for p in EXAMPLES.glob("*/problem.py"))
EXPECTED = {"fused_elementwise", "rmsnorm", "softmax", "gemm_epilogue", "embedding_bag", "fm_interaction"}


def test_every_expected_example_is_bundled() -> None:
    assert set(NAMES) >= EXPECTED


def test_readme_lists_every_example() -> None:
    readme = (EXAMPLES / "README.md").read_text()
    assert [n for n in NAMES if f"`{n}`" not in readme] == []


@pytest.mark.parametrize("name", NAMES)
def test_example_problem_has_test_and_benchmark_sets(name: str) -> None:
    source = (EXAMPLES / name / "problem.py").read_text()
    tree = check_problem_source(source, name)
    functions = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert {"get_test_inputs", "get_benchmark_inputs"} <= functions
    check_candidate_source((EXAMPLES / name / "candidate.py").read_text(), name)


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_example_candidate_is_accepted_end_to_end(name: str) -> None:
    problem = EXAMPLES / name / "problem.py"
    result = evaluate(problem, (EXAMPLES / name / "candidate.py").read_text(), EvalConfig(device="cpu"))
    detail = f"{result.stage.value}: {result.reason}\n{result.log_tail[-2000:]}"
    assert result.verdict is Verdict.CORRECT, detail
    assert result.stage is Stage.DONE
    assert all(s.passed for s in result.input_sets)
    assert sum(s.name.startswith("test:") for s in result.input_sets) >= 3
    assert result.timing_kind is TimingKind.MODELLED
