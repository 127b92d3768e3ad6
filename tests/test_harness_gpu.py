"""The harness on a real GPU: measured timing, CUDA-specific hacks and faults (skipped without CUDA)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from kernelevolve.search.config import EvalConfig
from kernelevolve.search.harness import evaluate
from kernelevolve.search.results import Stage, TimingKind, Verdict

HERE = Path(__file__).parent
PROBLEM = HERE / "harness_fixtures" / "add_problem.py"
HONEST = (HERE / "harness_fixtures" / "add_candidate.py").read_text()

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
]

ILLEGAL_ACCESS = """
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def wild_store(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs + (1 << 40), tl.zeros([BLOCK], dtype=tl.float32), mask=offs < n)


class ModelNew(nn.Module):
    def forward(self, x, y):
        out = torch.empty_like(x)
        wild_store[(1,)](out, x.numel(), BLOCK=64)
        return out
"""

STALE_BUFFER = """
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def touch(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.load(x_ptr + offs, mask=offs < n)


class ModelNew(nn.Module):
    def forward(self, x, y):
        out = torch.empty_like(x)  # never written: whatever the allocator hands back
        touch[(1,)](x, x.numel(), BLOCK=64)
        return out
"""


def test_honest_candidate_is_accepted_with_measured_timing_on_the_gpu() -> None:
    result = evaluate(PROBLEM, HONEST, EvalConfig(device="cuda", gpu_index=0))
    assert result.verdict is Verdict.CORRECT, (result.stage, result.reason, result.log_tail)
    assert result.timing_kind is TimingKind.MEASURED
    assert result.timings and all(t.kind is TimingKind.MEASURED for t in result.timings)
    assert result.speedup_vs_eager is not None and result.speedup_vs_eager > 0
    assert result.fingerprint is not None and "cpu" not in result.fingerprint.device.lower()


def test_illegal_memory_access_is_a_recorded_rejection() -> None:
    result = evaluate(
        PROBLEM, ILLEGAL_ACCESS, EvalConfig(device="cuda", skip_timing=True, static_checks=False)
    )
    assert result.verdict is Verdict.REJECTED
    assert result.stage in (Stage.COMPILE, Stage.SANDBOX), result.reason
    assert "illegal" in ((result.reason or "") + result.log_tail).lower()
    # the caller's own CUDA use is unaffected
    assert float(torch.ones(4, device="cuda").sum()) == 4.0


def test_unwritten_output_buffer_never_passes_on_the_gpu() -> None:
    result = evaluate(PROBLEM, STALE_BUFFER, EvalConfig(device="cuda", skip_timing=True, static_checks=False))
    assert result.verdict is Verdict.REJECTED
    assert result.stage is Stage.CORRECTNESS, result.reason
