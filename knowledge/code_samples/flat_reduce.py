"""Full reductions to a scalar (losses): one program loops over every element in BLOCK chunks.

Computes reductions of a whole rank-R tensor to a 0-d result (sum, mean, amax, amin) with the
pointwise prologue fused into the loop (e.g. (x - y)^2 for MSE, the BCE-with-logits terms) and a
scalar epilogue after it (e.g. the 1/N of a mean, a division by a valid-target count). Operands are
read through broadcast strides like the pointwise template; accumulators are BLOCK-wide vectors
reduced once at the end, so the summation order is fixed and the result deterministic.
Tunables: BLOCK (power of two, 256..4096), num_warps (1..8).
Constraints: numel < 2**31. One program: right for loss-sized inputs, not for huge tensors.
Slots filled by kernelevolve's lowering: params, shape, strides, index, init, body, final.
This instance: MSE loss, mean((x - y)^2) over x, y of shape (M, N).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from launch_helpers import broadcast_strides


@triton.jit
def flat_reduce_kernel(
    # @slot params
    x_ptr, y_ptr, out_ptr,
    # @end
    numel,
    # @slot shape
    size0, size1,
    # @end
    # @slot strides
    x_st0, x_st1, y_st0, y_st1,
    # @end
    BLOCK: tl.constexpr,
):
    # @slot init
    acc0 = tl.zeros([BLOCK], dtype=tl.float32)
    # @end
    for start in range(0, numel, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < numel
        # @slot index
        i1 = offs % size1
        i0 = offs // size1
        # @end
        # @slot body
        x = tl.load(x_ptr + i0 * x_st0 + i1 * x_st1, mask=mask, other=0.0).to(tl.float32)
        y = tl.load(y_ptr + i0 * y_st0 + i1 * y_st1, mask=mask, other=0.0).to(tl.float32)
        d = x - y
        acc0 += tl.where(mask, d * d, 0.0)
        # @end
    # @slot final
    loss = tl.sum(acc0, axis=0) / numel
    tl.store(out_ptr, loss)
    # @end


def mse_loss(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    m, n = x.shape
    out = torch.empty((), device=x.device, dtype=x.dtype)
    strides = broadcast_strides(x, 2) + broadcast_strides(y, 2)
    flat_reduce_kernel[(1,)](x, y, out, m * n, m, n, *strides, BLOCK=1024, num_warps=4)
    return out
