"""The CPU model: exact counting in Triton's interpreter and the directions a real GPU would show."""

from __future__ import annotations

import os

os.environ.setdefault("TRITON_INTERPRET", "1")

import pytest  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from kernelevolve.knowledge.hardware import load_hardware  # noqa: E402
from kernelevolve.search.config import EvalConfig  # noqa: E402
from kernelevolve.search.modelled import (  # noqa: E402
    CountingUnavailable,
    LaunchCount,
    LaunchLog,
    count_launches,
    install_modelled_autotuning,
    price_candidate,
    price_launch,
)
from kernelevolve.search.perf import TimingUnavailable, time_input_set  # noqa: E402
from kernelevolve.search.results import TimingKind  # noqa: E402
from triton.runtime import interpreter as interp  # noqa: E402

H200 = load_hardware("nvidia-h200")
CPU = EvalConfig(device="cpu")


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


@triton.jit
def strided_copy_kernel(x_ptr, out_ptr, n, STRIDE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs * STRIDE, mask=mask), mask=mask)


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)


@triton.jit
def descriptor_scale_kernel(x_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    xd = tl.make_tensor_descriptor(x_ptr, [M, N], [N, 1], [BM, BN])
    od = tl.make_tensor_descriptor(out_ptr, [M, N], [N, 1], [BM, BN])
    od.store([tl.program_id(0) * BM, 0], xd.load([tl.program_id(0) * BM, 0]) * 2)


@triton.autotune(
    configs=[triton.Config({"BLOCK": 16384}, num_warps=4), triton.Config({"BLOCK": 1024}, num_warps=4)],
    key=["n"],
)
@triton.jit
def autotuned_scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2, mask=mask)


class Add(nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x + y


class AddNew(nn.Module):
    def __init__(self, block: int = 256, num_warps: int = 4) -> None:
        super().__init__()
        self.block, self.num_warps = block, num_warps

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        n = x.numel()
        add_kernel[(triton.cdiv(n, self.block),)](x, y, out, n, BLOCK=self.block, num_warps=self.num_warps)
        return out


def _count_add(n: int, block: int, num_warps: int = 4) -> LaunchLog:
    x, y = torch.randn(n), torch.randn(n)
    with count_launches() as log:
        out = AddNew(block, num_warps)(x, y)
    torch.testing.assert_close(out, x + y)
    return log


def test_vector_add_counts_exact_unique_bytes_grid_and_warps() -> None:
    n = 1000
    log = _count_add(n, block=256, num_warps=2)
    (rec,) = log.launches
    assert rec.kernel == "add_kernel"
    assert rec.grid == (4, 1, 1) and rec.programs == 4
    assert rec.num_warps == 2
    assert rec.unique_bytes == 3 * 4 * n
    assert rec.loaded_bytes == 2 * 4 * n and rec.stored_bytes == 4 * n
    assert rec.unique_sector_bytes >= rec.unique_bytes
    assert rec.lane_ops >= 4 * 256  # the add and the mask compare over every lane of every program


def test_masked_out_lanes_move_no_bytes_but_still_cost_lane_ops() -> None:
    small, big = _count_add(1000, block=1024).launches[0], _count_add(1000, block=8192).launches[0]
    assert small.unique_bytes == big.unique_bytes == 3 * 4 * 1000
    assert big.lane_ops > 4 * small.lane_ops


def test_tensor_descriptor_loads_count_only_in_bounds_rows() -> None:
    x = torch.randn(30, 16)
    out = torch.empty_like(x)
    with count_launches() as log:
        descriptor_scale_kernel[(2,)](x, out, 30, 16, BM=16, BN=16)
    torch.testing.assert_close(out, x * 2)
    (rec,) = log.launches
    assert rec.loaded_bytes == rec.stored_bytes == 30 * 16 * 4  # the 2 padded rows move nothing
    assert rec.unique_bytes == 2 * 30 * 16 * 4


def test_dot_flops_are_two_m_n_k() -> None:
    a, b, c = torch.randn(32, 32), torch.randn(32, 32), torch.empty(32, 32)
    with count_launches() as log:
        matmul_kernel[(2, 2)](a, b, c, 32, 32, 32, BM=16, BN=16, BK=16)
    torch.testing.assert_close(c, a @ b, atol=1e-2, rtol=1e-2)
    (rec,) = log.launches
    assert rec.dot_flops == 2 * 32 * 32 * 32
    assert rec.dot_dtype == "float32"
    assert rec.unique_bytes == 3 * 32 * 32 * 4
    assert rec.loaded_bytes == 2 * 2 * 32 * 32 * 4  # each operand tile is loaded by two programs


def test_strided_loads_touch_more_sectors_and_model_slower_than_contiguous() -> None:
    n = 2048
    x = torch.randn(n * 8)
    out = torch.empty(n)
    times = {}
    for stride in (1, 8):
        with count_launches() as log:
            strided_copy_kernel[(triton.cdiv(n, 512),)](x, out, n, STRIDE=stride, BLOCK=512)
        rec = log.launches[0]
        assert rec.unique_bytes == 2 * 4 * n
        times[stride] = rec
    assert times[8].unique_sector_bytes >= 4 * times[1].unique_sector_bytes
    contiguous = price_launch(H200, hbm_bytes=times[1].unique_sector_bytes * 1000, l2_bytes=0, programs=4000)
    strided = price_launch(H200, hbm_bytes=times[8].unique_sector_bytes * 1000, l2_bytes=0, programs=4000)
    assert strided.time_ms > contiguous.time_ms


def test_grid_that_underfills_the_sms_models_slower_for_the_same_bytes() -> None:
    nbytes = 256 << 20
    full = price_launch(H200, hbm_bytes=nbytes, l2_bytes=nbytes, programs=4 * H200.sm_count)
    few = price_launch(H200, hbm_bytes=nbytes, l2_bytes=nbytes, programs=H200.sm_count // 4)
    one = price_launch(H200, hbm_bytes=nbytes, l2_bytes=nbytes, programs=1)
    assert one.time_ms > few.time_ms > full.time_ms
    assert full.u_mem == pytest.approx(1.0)


def test_blocks_too_small_to_keep_bytes_in_flight_model_slower() -> None:
    nbytes = 256 << 20
    tiny = price_launch(H200, hbm_bytes=nbytes, l2_bytes=nbytes, programs=132, bytes_per_instruction=128)
    roomy = price_launch(H200, hbm_bytes=nbytes, l2_bytes=nbytes, programs=132, bytes_per_instruction=16384)
    assert tiny.time_ms > roomy.time_ms


def test_a_partial_last_wave_costs_as_much_as_a_full_one() -> None:
    resident = H200.max_warps_per_sm // 4
    one_wave = H200.sm_count * resident
    nbytes = 1 << 30
    exact = price_launch(H200, hbm_bytes=nbytes, l2_bytes=0, programs=one_wave, bytes_per_instruction=1 << 16)
    spill = price_launch(
        H200, hbm_bytes=nbytes, l2_bytes=0, programs=one_wave + 1, bytes_per_instruction=1 << 16
    )
    assert spill.waves == 2 and exact.waves == 1
    assert spill.time_ms > exact.time_ms


def test_shared_memory_hungry_tiles_lower_occupancy_and_tensor_throughput() -> None:
    flops = 2 * 4096**3
    lean = price_launch(
        H200, hbm_bytes=0, l2_bytes=0, dot_flops=flops, dot_dtype="bfloat16", programs=132, num_warps=1
    )
    fat = price_launch(
        H200,
        hbm_bytes=0,
        l2_bytes=0,
        dot_flops=flops,
        dot_dtype="bfloat16",
        programs=132 * 4,
        num_warps=1,
        smem_per_program=H200.smem_per_sm,
    )
    assert fat.waves == 4 and lean.waves == 1
    assert fat.u_sm < 1.0


def test_compute_bound_dot_is_priced_at_the_tensor_core_rate() -> None:
    flops = 2 * 8192**3
    p = price_launch(
        H200, hbm_bytes=0, l2_bytes=0, dot_flops=flops, dot_dtype="bfloat16", programs=132 * 8, num_warps=8
    )
    assert p.bound == "tensor"
    assert p.time_ms == pytest.approx(
        (flops / (H200.matmul_tflops("bf16") * 1e12) + H200.launch_overhead_us * 1e-6) * 1e3, rel=1e-6
    )


def test_two_launches_cost_more_than_one_fused_launch_of_the_same_work() -> None:
    fused = LaunchCount(
        "k",
        grid=(64, 1, 1),
        loaded_bytes=2 << 20,
        stored_bytes=1 << 20,
        mem_instructions=192,
        unique_bytes=3 << 20,
        unique_sector_bytes=3 << 20,
        sector_bytes=3 << 20,
    )
    half = LaunchCount(
        "k",
        grid=(32, 1, 1),
        loaded_bytes=1 << 20,
        stored_bytes=1 << 19,
        mem_instructions=96,
        unique_bytes=3 << 19,
        unique_sector_bytes=3 << 19,
        sector_bytes=3 << 19,
    )
    one, _ = price_candidate(LaunchLog([fused]), H200)
    two, _ = price_candidate(LaunchLog([half, half]), H200)
    assert two > one


def test_time_input_set_on_cpu_is_modelled_and_never_below_the_floor() -> None:
    torch.manual_seed(0)
    for n, block in ((64, 64), (5000, 1024), (5000, 8192), (200_000, 1024)):
        x, y = torch.randn(n), torch.randn(n)
        t = time_input_set("seed:0", AddNew(block), Add(), [x, y], CPU, "cpu")
        assert t.kind is TimingKind.MODELLED
        assert t.roofline is not None and t.compile is not None
        for stats in (t.candidate, t.eager, t.compile):
            assert stats.median_ms >= t.roofline.floor_ms
        assert t.roofline_fraction is not None and 0 < t.roofline_fraction <= 1.0
        assert any("modelled on nvidia-h200" in note for note in t.notes)


def test_a_candidate_that_skips_work_is_still_not_modelled_below_the_floor() -> None:
    class ReadsOnlyX(nn.Module):  # wrong, but timing must not reward it with a sub-floor time
        def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            out = torch.empty_like(x)
            n = x.numel()
            add_kernel[(triton.cdiv(n, 1024),)](x, x, out, n, BLOCK=1024)
            return out

    x, y = torch.randn(300_000), torch.randn(300_000)
    t = time_input_set("seed:0", ReadsOnlyX(), Add(), [x, y], CPU, "cpu")
    assert t.roofline is not None
    assert t.candidate.median_ms >= t.roofline.floor_ms


def test_fused_kernel_models_faster_than_eager_chain_of_ops() -> None:
    class Chain(nn.Module):
        def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            return ((x + y) * 2 - y).relu()

    x, y = torch.randn(200_000), torch.randn(200_000)
    t = time_input_set("seed:0", AddNew(1024), Chain(), [x, y], CPU, "cpu")
    assert t.speedup_vs_eager > 1.5


def test_missing_interpreter_hook_gives_a_clear_error_and_no_number(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(interp.InterpreterBuilder, "create_dot")
    with pytest.raises(CountingUnavailable, match="create_dot"), count_launches():
        pass
    x, y = torch.randn(64), torch.randn(64)
    with pytest.raises(TimingUnavailable, match="no modelled timing: .*create_dot"):
        time_input_set("seed:0", AddNew(64), Add(), [x, y], CPU, "cpu")


def test_hooks_are_removed_after_counting() -> None:
    original_run = interp.InterpretedFunction.run
    with count_launches():
        assert "create_masked_load" in vars(interp.interpreter_builder)
    assert "create_masked_load" not in vars(interp.interpreter_builder)
    assert interp.InterpretedFunction.run is original_run


def test_modelled_autotuning_runs_autotuned_kernels_and_keeps_the_config_the_model_prefers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from triton.runtime.autotuner import Autotuner

    monkeypatch.setattr(Autotuner, "_bench", Autotuner._bench)  # restored after the test
    assert install_modelled_autotuning("nvidia-h200")
    n = 20_000
    x = torch.randn(n)
    out = torch.empty_like(x)
    autotuned_scale_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, out, n)
    torch.testing.assert_close(out, x * 2)
    # 2 programs of 16384 leave 130 SMs idle; 20 programs of 1024 keep more bytes in flight
    assert autotuned_scale_kernel.best_config.kwargs["BLOCK"] == 1024
    timings = {c.kwargs["BLOCK"]: t[0] for c, t in autotuned_scale_kernel.configs_timings.items()}
    assert timings[16384] > timings[1024]
    with count_launches() as log:  # the trials are not counted as part of a timed call
        autotuned_scale_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, out, n)
    assert [r.grid for r in log.launches] == [(20, 1, 1)]


def test_nested_counting_restores_the_outer_hooks() -> None:
    x, y = torch.randn(64), torch.randn(64)
    with count_launches() as outer:
        with count_launches() as inner:
            AddNew(64)(x, y)
        AddNew(64)(x, y)
    assert len(inner.launches) == 1 and len(outer.launches) == 2
    assert outer.launches[1].unique_bytes == 3 * 4 * 64
    assert "create_masked_load" not in vars(interp.interpreter_builder)
