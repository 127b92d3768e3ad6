"""GEMM family with a fused epilogue: mm, bmm, addmm / linear (+bias) then pointwise ops.

Computes C[b] = epilogue(A[b] @ B[b]) for A (Bt, M, K), B (Bt, K, N) (Bt = 1 for mm/addmm), where
the epilogue is any chain of pointwise ops on the fp32 accumulator tile with extra operands
broadcast to (Bt, M, N) by strides: bias (addmm's beta*bias + alpha*acc), activation (relu, gelu,
silu, sigmoid, tanh...), scale, residual add. The tile is stored once, so the epilogue costs no
extra pass over C. A and B are read through their strides: a transposed weight (linear's
W^T = permute(W)) is never copied. Grouped ordering of output tiles (GROUP_M) improves L2 reuse.
The grid is one axis of Bt * tiles programs, so neither count meets the 65535 limit of axis 1.
fp32 inputs use input_precision="ieee" so results match fp32 PyTorch (no TF32) on the GPU and
in the interpreter alike; fp16/bf16 inputs use the tensor cores with fp32 accumulation.
Tunables: BLOCK_M, BLOCK_N (16..256), BLOCK_K (16..128), GROUP_M (1..16), num_warps (2..8),
num_stages (1..5).
Constraints: BLOCK_* >= 16 (tl.dot); M, N, K any size (masked tails).
Slots filled by kernelevolve's lowering: params, strides, epilogue.
This instance: relu(x @ W^T + b), i.e. nn.Linear followed by ReLU.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from launch_helpers import broadcast_strides


@triton.jit
def gemm_kernel(
    a_ptr, b_ptr,
    # @slot params
    bias_ptr, out_ptr,
    # @end
    M, N, K,
    a_sb, a_sm, a_sk, b_sb, b_sk, b_sn,
    # @slot strides
    bias_sb, bias_sm, bias_sn, out_sb, out_sm, out_sn,
    # @end
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
    IEEE: tl.constexpr,
):
    num_m = tl.cdiv(M, BLOCK_M)
    num_n = tl.cdiv(N, BLOCK_N)
    bid = tl.program_id(0) // (num_m * num_n)  # batch and tile share grid axis 0 (no 65535 limit)
    pid = tl.program_id(0) % (num_m * num_n)
    group = GROUP_M * num_n
    first_m = (pid // group) * GROUP_M
    group_m = min(num_m - first_m, GROUP_M)
    pid_m = first_m + ((pid % group) % group_m)
    pid_n = (pid % group) // group_m
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_base = a_ptr + bid * a_sb + rm[:, None] * a_sm
    b_base = b_ptr + bid * b_sb + rn[None, :] * b_sn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        kk = k0 + rk
        a = tl.load(a_base + kk[None, :] * a_sk, mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        b = tl.load(b_base + kk[:, None] * b_sk, mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
        if IEEE:
            acc += tl.dot(a, b, input_precision="ieee")
        else:
            acc += tl.dot(a, b)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    # @slot epilogue
    bias = tl.load(bias_ptr + bid * bias_sb + rm[:, None] * bias_sm + rn[None, :] * bias_sn, mask=mask, other=0.0)
    y = tl.maximum(acc + bias.to(tl.float32), 0.0)
    tl.store(out_ptr + bid * out_sb + rm[:, None] * out_sm + rn[None, :] * out_sn, y, mask=mask)
    # @end


def linear_relu(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    m, k = x.shape
    n = weight.shape[0]
    out = torch.empty((m, n), device=x.device, dtype=x.dtype)
    wt = weight.t()
    strides = broadcast_strides(bias, 3) + broadcast_strides(out, 3)
    grid = (triton.cdiv(m, 64) * triton.cdiv(n, 64),)
    gemm_kernel[grid](
        x, wt, bias, out, m, n, k, 0, x.stride(0), x.stride(1), 0, wt.stride(0), wt.stride(1), *strides,
        BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, GROUP_M=8, IEEE=x.dtype == torch.float32, num_warps=4, num_stages=3,
    )
    return out
