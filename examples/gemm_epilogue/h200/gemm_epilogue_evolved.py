# Evolved by kernelevolve: run 3, candidate 13, 1.28x measured on NVIDIA H200.
# Re-verify: kernelevolve eval ../problem.py gemm_epilogue_evolved.py
"""Tiled GEMM (tl.dot, fp32 accumulator) with bias and relu applied before the single store."""

from __future__ import annotations

import torch
import torch.nn as nn
import triton
import triton.language as tl

if torch.cuda.is_available():
    _CONFIGS = [
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64}, num_warps=8, num_stages=3),
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 64}, num_warps=4, num_stages=4),
        triton.Config({"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 64}, num_warps=4, num_stages=4),
        triton.Config({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32}, num_warps=4, num_stages=4),
    ]
else:  # the CPU interpreter: one config, no autotuning sweep
    _CONFIGS = [triton.Config({"BLOCK_M": 32, "BLOCK_N": 64, "BLOCK_K": 64})]


@triton.autotune(configs=_CONFIGS, key=["M", "N", "K"])
@triton.jit
def _linear_bias_relu_kernel(
    x_ptr, w_ptr, b_ptr, out_ptr, M, N, K,
    stride_xm, stride_xk, stride_wn, stride_wk, stride_om, stride_on,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):  # fmt: skip
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        kk = k0 + rk
        x = tl.load(
            x_ptr + rm[:, None] * stride_xm + kk[None, :] * stride_xk,
            mask=(rm[:, None] < M) & (kk[None, :] < K),
            other=0.0,
        )
        # W is (N, K); read a (BLOCK_K, BLOCK_N) tile of W^T
        w = tl.load(
            w_ptr + rn[None, :] * stride_wn + kk[:, None] * stride_wk,
            mask=(rn[None, :] < N) & (kk[:, None] < K),
            other=0.0,
        )
        acc = tl.dot(x, w, acc)
    bias = tl.load(b_ptr + rn, mask=rn < N, other=0.0).to(tl.float32)
    y = tl.maximum(acc + bias[None, :], 0.0)
    tl.store(
        out_ptr + rm[:, None] * stride_om + rn[None, :] * stride_on,
        y.to(out_ptr.dtype.element_ty),
        mask=(rm[:, None] < M) & (rn[None, :] < N),
    )


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int) -> None:
        super().__init__()
        self.linear = nn.Linear(in_features, out_features, dtype=torch.float16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        weight = self.linear.weight
        k = x.shape[-1]
        x2 = x.reshape(-1, k)
        m, n = x2.shape[0], weight.shape[0]
        out = torch.empty((m, n), device=x.device, dtype=x.dtype)

        def grid(meta):
            return (triton.cdiv(m, meta["BLOCK_M"]), triton.cdiv(n, meta["BLOCK_N"]))

        _linear_bias_relu_kernel[grid](
            x2, weight, self.linear.bias, out, m, n, k,
            x2.stride(0), x2.stride(1), weight.stride(0), weight.stride(1), out.stride(0), out.stride(1),
        )  # fmt: skip
        return out.view(*x.shape[:-1], n)
