from __future__ import annotations

import pytest
import torch
import torch.nn as nn
from kernelevolve.knowledge.hardware import load_hardware
from kernelevolve.search.perf import FLOOR_SLACK, floor_violation
from kernelevolve.search.results import Roofline, ShapeTiming, TimingKind, TimingStats
from kernelevolve.search.roofline import roofline_for, trace_reference

H200 = load_hardware("nvidia-h200")


class AddRelu(nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.relu(x + y) * 2


def test_elementwise_floor_counts_inputs_once_and_output_once_but_no_intermediates() -> None:
    x, y = torch.randn(256, 256), torch.randn(256, 256)
    trace, _ = trace_reference(AddRelu(), [x, y])
    assert trace.leaf_read_bytes == 2 * 256 * 256 * 4
    assert trace.output_bytes == 256 * 256 * 4
    assert trace.flops == 0
    roof = roofline_for(trace, H200)
    assert roof.bytes_moved == 3 * 256 * 256 * 4
    assert roof.bound == "memory"
    assert roof.floor_ms == pytest.approx(roof.bytes_moved / (H200.bandwidth_gbps() * 1e9) * 1e3)
    assert roof.ceiling == "measured"


def test_matmul_flops_come_from_flop_counter_and_make_it_compute_bound() -> None:
    a = torch.randn(1024, 1024, dtype=torch.bfloat16)
    b = torch.randn(1024, 1024, dtype=torch.bfloat16)

    class MM(nn.Module):
        def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
            return a @ b

    trace, _ = trace_reference(MM(), [a, b])
    assert trace.flops == 2 * 1024**3
    roof = roofline_for(trace, H200)
    assert roof.bound == "compute"
    assert roof.floor_ms == pytest.approx(2 * 1024**3 / (H200.matmul_tflops("bf16") * 1e12) * 1e3)


def test_linear_weight_and_bias_are_read_bytes() -> None:
    torch.manual_seed(0)
    lin = nn.Linear(64, 32)
    trace, _ = trace_reference(lin, [torch.randn(8, 64)])
    assert trace.leaf_read_bytes == (8 * 64 + 64 * 32 + 32) * 4
    assert trace.output_bytes == 8 * 32 * 4
    assert trace.flops == 2 * 8 * 64 * 32


def test_a_slice_of_an_input_counts_only_the_slice() -> None:
    class FirstColumns(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x[:, :8].sum(dim=1)

    trace, _ = trace_reference(FirstColumns(), [torch.randn(100, 64)])
    assert trace.leaf_read_bytes == 100 * 8 * 4
    assert trace.output_bytes == 100 * 4


def test_a_broadcast_operand_counts_once() -> None:
    class AddBias(nn.Module):
        def forward(self, x: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
            return x + b.expand_as(x)

    trace, _ = trace_reference(AddBias(), [torch.randn(128, 32), torch.randn(32)])
    assert trace.leaf_read_bytes == (128 * 32 + 32) * 4


def test_embedding_bag_table_counts_only_distinct_rows_named_by_indices() -> None:
    torch.manual_seed(0)
    bag = nn.EmbeddingBag(10_000, 16, mode="sum")
    indices = torch.tensor([3, 3, 7, 9, 9, 9, 42, 5000])
    offsets = torch.tensor([0, 3, 6])
    trace, _ = trace_reference(bag, [indices, offsets])
    distinct_rows = 5
    assert trace.leaf_read_bytes == distinct_rows * 16 * 4 + indices.numel() * 8 + offsets.numel() * 8
    # the 640 KB table is far bigger than what the floor charges
    assert trace.leaf_read_bytes < 10_000 * 16 * 4 // 100


def test_hard_floor_uses_datasheet_peaks_and_is_never_above_the_reported_floor() -> None:
    x, y = torch.randn(512, 512), torch.randn(512, 512)
    trace, _ = trace_reference(AddRelu(), [x, y])
    roof = roofline_for(trace, H200)
    assert roof.hard_floor_ms is not None
    assert roof.hard_floor_ms < roof.floor_ms
    # the 1 MB output fits in L2: only the reads are charged to HBM at the datasheet rate
    assert roof.hard_floor_ms == pytest.approx(trace.leaf_read_bytes / (H200.hbm_gbps * 1e9) * 1e3)


def _timing(
    candidate_ms: float, kind: TimingKind = TimingKind.MEASURED, issue: str | None = None
) -> ShapeTiming:
    stats = TimingStats(candidate_ms, candidate_ms, candidate_ms, candidate_ms, 20)
    roof = Roofline("nvidia-h200", 134_000_000, 0, floor_ms=0.031, bound="memory", hard_floor_ms=0.028)
    return ShapeTiming("seed:0", [[1]], kind, stats, stats, roofline=roof, integrity_issue=issue)


def test_floor_violation_rejects_a_measured_time_below_the_floor() -> None:
    reason = floor_violation(_timing(0.012))
    assert reason is not None
    assert "candidate 0.012 ms is below the roofline floor 0.028 ms for 134 MB" in reason
    assert "nvidia-h200" in reason and "cannot be trusted" in reason


def test_floor_violation_allows_measurement_noise_just_under_the_floor() -> None:
    assert floor_violation(_timing(0.028 * (1 - FLOOR_SLACK / 2))) is None
    assert floor_violation(_timing(0.040)) is None


def test_floor_violation_ignores_modelled_timings_but_reports_integrity_issues() -> None:
    assert floor_violation(_timing(0.001, kind=TimingKind.MODELLED)) is None
    reason = floor_violation(_timing(0.040, issue="work continued after the timed call returned"))
    assert reason is not None and "timing cross-check failed" in reason
