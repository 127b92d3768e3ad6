"""Every known reward hack in tests/adversarial/ is rejected by the real harness, at the layer
that should catch it, with a reason naming the check; the honest control is accepted.

Each case runs ``evaluate`` end to end (sandboxed worker, Triton's CPU interpreter). Hacks the
static check catches also run with ``static_checks=False`` where a runtime check can catch them
too (defence in depth). The table is mirrored in tests/adversarial/README.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from kernelevolve.search.config import EvalConfig
from kernelevolve.search.harness import evaluate
from kernelevolve.search.results import EvalResult, Stage, Verdict

CORPUS = Path(__file__).parent / "adversarial"
PROBLEM = CORPUS / "problem.py"
# One seed is enough to expose every hack here (the test sets add odd shapes); no timing.
QUICK = dict(skip_timing=True, seeds=(0,))


@dataclass(frozen=True)
class Hack:
    file: str
    stage: Stage  # where the full harness stops it
    reason: str  # a fragment of the reason naming the check
    runtime_stage: Stage | None = None  # with static checks off: where the runtime stops it
    runtime_reason: str | None = None
    runtime_gap: str | None = None  # a known hole in the runtime checks (static is the only defence)


HACKS = [
    # Written to pass the static check: only the runtime can catch these.
    Hack("return_input", Stage.CORRECTNESS, "elements outside atol"),
    Hack("constant_output", Stage.CORRECTNESS, "elements outside atol"),
    # The candidate runs before the reference ever did, so the recycled buffer holds poison or
    # garbage (which of the two depends on the allocator): either way the first run fails.
    Hack("buffer_reuse", Stage.CORRECTNESS, "(first run, before the reference)"),
    Hack("input_mutation", Stage.CORRECTNESS, "modified in place"),
    Hack("cache_across_calls", Stage.CORRECTNESS, "cached or reused across calls"),
    Hack("precision_downgrade", Stage.CORRECTNESS, "outside atol=0.0001"),
    Hack("shape_specialisation", Stage.CORRECTNESS, "expected [3, 5]"),
    # Caught statically; most also by a runtime check.
    Hack(
        "torch_call",
        Stage.STATIC,
        "torch.mean computes with torch",
        Stage.GHOST,
        "kernels are not doing the work",
    ),
    Hack("torch_alias", Stage.STATIC, "import torch as T", Stage.GHOST, "kernels are not doing the work"),
    Hack(
        "torch_getattr", Stage.STATIC, "getattr is not allowed", Stage.GHOST, "kernels are not doing the work"
    ),
    Hack("torch_dunder_import", Stage.STATIC, "__import__", Stage.GHOST, "kernels are not doing the work"),
    Hack(
        "try_except_fallback",
        Stage.STATIC,
        "try/except",
        Stage.CORRECTNESS,
        "a Triton launch raised and the candidate returned anyway",
    ),
    Hack("inherit_model", Stage.STATIC, "inheriting the reference Model", Stage.GHOST, "no Triton kernel"),
    Hack("cache_on_self", Stage.STATIC, "outside __init__", Stage.CORRECTNESS, "cached or reused"),
    Hack("cache_module_dict", Stage.STATIC, "module-level container", Stage.CORRECTNESS, "cached or reused"),
    Hack("lazy_tensor", Stage.STATIC, "may inherit only nn.Module", Stage.CORRECTNESS, "tensor subclass"),
    Hack("background_thread", Stage.STATIC, "importing threading", Stage.CORRECTNESS, "thread"),
    Hack(
        "timer_patching",
        Stage.STATIC,
        "patches a library module",
        Stage.COMPILE,
        "tampering with the harness",
    ),
    Hack("precision_cast", Stage.STATIC, "can downgrade precision", Stage.CORRECTNESS, "outside atol=0.0001"),
    Hack(
        "frame_inspection",
        Stage.STATIC,
        "reads interpreter frames",
        Stage.CORRECTNESS,
        "elements outside atol",
    ),
    Hack(
        "ghost_pre_hook",
        Stage.STATIC,
        "pre_hook= runs arbitrary Python",
        Stage.GHOST,
        "kernels are not doing the work",  # ghost replay silences only the leaf launch; hooks still run
    ),
    Hack(
        "partial_torch",
        Stage.STATIC,
        "t.mean(dim=-1): .mean() computes with torch",
        Stage.GHOST,
        "kernels are not doing the work",
        runtime_gap="inherent: ghost replay proves the kernels matter, not that they do all the work",
    ),
    Hack("side_stream", Stage.STATIC, "streams, events, graphs"),  # runtime variant needs CUDA
    Hack("read_environment", Stage.STATIC, "importing os is not allowed"),  # reading alone changes no output
]


def _evaluate(file: str, static_checks: bool = True) -> EvalResult:
    source = (CORPUS / f"{file}.py").read_text()
    config = EvalConfig(static_checks=static_checks, **QUICK)  # type: ignore[arg-type]
    return evaluate(PROBLEM, source, config, candidate_name=f"{file}.py")


def _describe(result: EvalResult) -> str:
    return f"{result.verdict.value} at {result.stage.value}: {result.reason}\n{result.log_tail[-2000:]}"


def test_corpus_covers_every_file() -> None:
    files = {p.stem for p in CORPUS.glob("*.py")} - {"problem", "honest"}
    assert files == {h.file for h in HACKS}


def test_readme_table_lists_every_hack() -> None:
    readme = (CORPUS / "README.md").read_text()
    missing = [h.file for h in HACKS if f"`{h.file}.py`" not in readme]
    assert not missing, f"tests/adversarial/README.md lacks {missing}"


@pytest.mark.slow
def test_honest_control_is_accepted() -> None:
    result = _evaluate("honest")
    assert result.verdict is Verdict.CORRECT, _describe(result)
    assert result.stage is Stage.DONE


@pytest.mark.slow
@pytest.mark.parametrize("hack", HACKS, ids=[h.file for h in HACKS])
def test_hack_is_rejected_with_its_reason(hack: Hack) -> None:
    result = _evaluate(hack.file)
    assert result.verdict is Verdict.REJECTED, _describe(result)
    assert result.stage is hack.stage, _describe(result)
    assert result.reason and hack.reason in result.reason, _describe(result)


RUNTIME_CASES = [h for h in HACKS if h.stage is Stage.STATIC and h.runtime_stage is not None]


@pytest.mark.slow
@pytest.mark.parametrize(
    "hack",
    [
        pytest.param(h, marks=pytest.mark.xfail(strict=True, reason=h.runtime_gap)) if h.runtime_gap else h
        for h in RUNTIME_CASES
    ],
    ids=[h.file for h in RUNTIME_CASES],
)
def test_runtime_rejects_static_caught_hack_without_static_checks(hack: Hack) -> None:
    result = _evaluate(hack.file, static_checks=False)
    assert result.verdict is Verdict.REJECTED, _describe(result)
    assert result.stage is hack.runtime_stage, _describe(result)
    assert result.reason and hack.runtime_reason and hack.runtime_reason in result.reason, _describe(result)
