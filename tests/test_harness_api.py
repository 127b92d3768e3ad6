"""The harness's public API: bad input raises ProblemError, describe_problem, stage callbacks."""

from __future__ import annotations

from pathlib import Path

import pytest
from kernelevolve.search.config import EvalConfig
from kernelevolve.search.harness import describe_problem, evaluate
from kernelevolve.search.problem import ProblemError, TensorSpec
from kernelevolve.search.results import Stage, Verdict

HERE = Path(__file__).parent
PROBLEM = HERE / "harness_fixtures" / "add_problem.py"
HONEST = (HERE / "harness_fixtures" / "add_candidate.py").read_text()
CPU = EvalConfig(device="cpu", skip_timing=True)


def test_missing_problem_file_raises_problem_error(tmp_path: Path) -> None:
    with pytest.raises(ProblemError, match="problem file not found"):
        evaluate(tmp_path / "nope.py", HONEST, CPU)


def test_problem_without_get_inputs_names_what_is_missing(tmp_path: Path) -> None:
    bad = tmp_path / "problem.py"
    bad.write_text(
        "import torch\nclass Model(torch.nn.Module):\n    pass\ndef get_init_inputs():\n    return []\n"
    )
    with pytest.raises(ProblemError, match="lacks get_inputs"):
        evaluate(bad, HONEST, CPU)


def test_candidate_without_model_new_raises_problem_error() -> None:
    with pytest.raises(ProblemError, match="lacks class ModelNew"):
        evaluate(PROBLEM, "import torch\n", CPU, candidate_name="k.py")


def test_candidate_with_syntax_error_raises_problem_error() -> None:
    with pytest.raises(ProblemError, match="k.py:1: syntax error"):
        evaluate(PROBLEM, "class ModelNew(:\n", CPU, candidate_name="k.py")


@pytest.mark.slow
def test_problem_whose_get_inputs_fails_at_runtime_raises_problem_error(tmp_path: Path) -> None:
    bad = tmp_path / "problem.py"
    bad.write_text(
        PROBLEM.read_text().replace("return [torch.randn(37), torch.randn(37)]", "raise KeyError('x')")
    )
    with pytest.raises(ProblemError, match="building the problem's inputs failed: KeyError"):
        evaluate(bad, HONEST, CPU)


@pytest.mark.slow
def test_describe_problem_reports_inputs_ops_and_extensions() -> None:
    spec = describe_problem(PROBLEM, CPU)
    assert spec.inputs == [TensorSpec((37,), "float32"), TensorSpec((37,), "float32")]
    assert spec.init_inputs == []
    assert spec.ops == ["aten.add.Tensor"]
    assert spec.has_test_inputs and not spec.has_benchmark_inputs
    assert spec.device == "cpu"
    assert spec.name == "add_problem"
    assert "aten.add.Tensor" in spec.signature and "float32[37]" in spec.signature


@pytest.mark.slow
def test_stage_callback_sees_every_stage_in_order() -> None:
    seen: list[Stage] = []
    result = evaluate(PROBLEM, HONEST, CPU, on_stage=seen.append)
    assert result.verdict is Verdict.CORRECT
    assert seen == [Stage.STATIC, Stage.COMPILE, Stage.CORRECTNESS, Stage.GHOST, Stage.CORRECTNESS]


@pytest.mark.slow
def test_int_inputs_that_are_not_integer_tensors_raise_problem_error(tmp_path: Path) -> None:
    bad = tmp_path / "problem.py"
    bad.write_text(PROBLEM.read_text() + "\nINT_INPUTS = [1]\n")
    with pytest.raises(
        ProblemError, match="INT_INPUTS names argument 1, but in seed:0 it is Tensor torch.float32"
    ):
        evaluate(bad, HONEST, CPU)
