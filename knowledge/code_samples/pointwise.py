"""Fused pointwise chain with broadcasting: one kernel for a whole DAG of elementwise ops.

Computes: out = f(a, b, ...) elementwise over the broadcast output shape (rank R). f is the
expression DAG of the captured graph written in tl.* (float math in fp32, cast on store). Every
operand is read through its own strides with stride 0 on broadcast dims (see
launch_helpers.broadcast_strides), so nothing is expanded or copied in memory and non-contiguous
inputs work as they are. The flat output index is split into an R-dim index once per element.
Tunables: BLOCK (power of two, 256..4096), num_warps (1..8).
Constraints: output numel < 2**31; every operand broadcasts to the output shape.
Slots filled by kernelevolve's lowering: params, shape, strides, index, body.
This instance: out = gelu(x * scale + bias) + residual, x/residual (M, N), scale/bias (N,).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from launch_helpers import broadcast_strides


@triton.jit
def pointwise_kernel(
    # @slot params
    x_ptr, scale_ptr, bias_ptr, res_ptr, out_ptr,
    # @end
    numel,
    # @slot shape
    size0, size1,
    # @end
    # @slot strides
    x_st0, x_st1, scale_st0, scale_st1, bias_st0, bias_st1, res_st0, res_st1, out_st0, out_st1,
    # @end
    BLOCK: tl.constexpr,
):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < numel
    # @slot index
    i1 = offs % size1
    i0 = offs // size1
    # @end
    # @slot body
    x = tl.load(x_ptr + i0 * x_st0 + i1 * x_st1, mask=mask, other=0.0).to(tl.float32)
    scale = tl.load(scale_ptr + i0 * scale_st0 + i1 * scale_st1, mask=mask, other=0.0).to(tl.float32)
    bias = tl.load(bias_ptr + i0 * bias_st0 + i1 * bias_st1, mask=mask, other=0.0).to(tl.float32)
    res = tl.load(res_ptr + i0 * res_st0 + i1 * res_st1, mask=mask, other=0.0).to(tl.float32)
    h = x * scale + bias
    y = 0.5 * h * (1.0 + tl.erf(h * 0.7071067811865476)) + res
    tl.store(out_ptr + i0 * out_st0 + i1 * out_st1, y, mask=mask)
    # @end


def fused_gelu_residual(x: torch.Tensor, scale: torch.Tensor, bias: torch.Tensor, res: torch.Tensor) -> torch.Tensor:
    m, n = x.shape
    out = torch.empty((m, n), device=x.device, dtype=x.dtype)
    numel = m * n
    strides = []
    for t in (x, scale, bias, res, out):
        strides += broadcast_strides(t, 2)
    grid = (triton.cdiv(numel, 1024),)
    pointwise_kernel[grid](x, scale, bias, res, out, numel, m, n, *strides, BLOCK=1024, num_warps=4)
    return out
