"""Diagnosis of real harness results, and the retrieval it drives."""

from __future__ import annotations

import pytest
from kernelevolve.knowledge.kb import KnowledgeBase
from kernelevolve.search.config import EvalConfig
from kernelevolve.search.harness import evaluate
from kernelevolve.search.llm.diagnosis import diagnose, platform_for, platform_of_device

from .conftest import DATA, PROBLEM

GOOD = (DATA / "candidate_ok.py").read_text()


def retrieve(kb: KnowledgeBase, result, limit: int = 4) -> list[str]:  # type: ignore[no-untyped-def]
    d = diagnose(result, default_hardware="nvidia-h200")
    return [
        h.document.id
        for h in kb.search(d.query, platform=d.platform, kind=d.kind, phase=d.phase, limit=limit)
    ]


def test_platforms_come_from_the_hardware_facts() -> None:
    assert platform_for("nvidia-h200") == "hopper"
    assert platform_for("nvidia-a100") == "ampere"
    assert platform_for("nvidia-b200") == "blackwell"
    assert platform_for("amd-mi300x") == "cdna3"
    assert platform_for("no-such-gpu") is None
    assert platform_of_device("NVIDIA H200") == "hopper"


def test_draft_phase_without_a_parent() -> None:
    d = diagnose(None, default_hardware="nvidia-h200", op_hint="mul add")
    assert (d.phase, d.platform, d.hardware) == ("draft", "hopper", "nvidia-h200")


def test_compile_failure_is_diagnosed_as_compile_and_retrieves_the_compiler_errors_guide(
    kb: KnowledgeBase,
) -> None:
    result = evaluate(
        PROBLEM, GOOD.replace("BLOCK=256", "BLOCK=100"), EvalConfig(seeds=(0,), skip_timing=True)
    )
    d = diagnose(result, default_hardware="nvidia-h200")
    assert (d.kind, d.phase) == ("compile", "debug")
    assert "arange's range must be a power of 2" in d.evidence[0]
    assert "guidance/compiler-errors" in retrieve(kb, result)[:3]


def test_wrong_results_are_diagnosed_as_correctness_with_the_failing_input_set(kb: KnowledgeBase) -> None:
    result = evaluate(
        PROBLEM, GOOD.replace("x * 2.0 + 1.0", "x * 2.0 + 1.001"), EvalConfig(seeds=(0,), skip_timing=True)
    )
    d = diagnose(result, default_hardware="nvidia-h200")
    assert (d.kind, d.phase) == ("correctness", "debug")
    assert any(line.startswith("input set seed:0 shapes [[1000]]") for line in d.evidence)
    assert "guidance/debugging" in retrieve(kb, result, limit=6)


@pytest.mark.slow
def test_a_correct_modelled_kernel_on_tiny_inputs_is_latency_bound(kb: KnowledgeBase) -> None:
    result = evaluate(PROBLEM, GOOD, EvalConfig(seeds=(0,), compile_baseline=False))
    assert result.correct and result.timing_kind is not None and result.timing_kind.value == "modelled"
    d = diagnose(result, default_hardware="nvidia-h200")
    assert (d.kind, d.phase, d.hardware) == ("latency", "optimise", "nvidia-h200")
    assert all("(modelled); roofline memory-bound floor" in line for line in d.evidence)
    assert retrieve(kb, result)[0] == "guidance/latency-bound"
