"""Row reductions and normalisations: ROWS rows per program, each whole row in one block.

Computes any mix of pointwise ops and reductions over one dim k of a rank-R shape F: sum, mean,
amax/amin, max/min (values and indices), argmax/argmin, var, softmax, log_softmax, layer_norm,
rms_norm (as pow/mean/add/rsqrt/mul), gather along k (cross-entropy's pick of the target logit),
with pointwise prologue and epilogue ops fused. The program id is split into the R-1 indices of
the rows; lanes run along k (any stride, so reductions over a non-last dim need no transpose).
A program holds a [ROWS, BLOCK_N] tile: per-row values (reduction results) are [ROWS, 1], row
values [ROWS, BLOCK_N]. Several short rows per program keep loads coalesced when k is not the
innermost dim (e.g. DeepFM's sum over fields) and amortise launch overhead for short rows.
Masked lanes are excluded from every reduction (0 for sums, -inf/+inf for max/min).
Tunables: ROWS (power of two; the launcher caps ROWS * BLOCK_N), num_warps (1..16).
BLOCK_N = next_power_of_2(F[k]) must hold the whole row.
Constraints: F[k] <= 65536 (one block per row); rows < 2**31.
Slots filled by kernelevolve's lowering: params, shape, strides, index, body.
This instance: RMSNorm, y = x * rsqrt(mean(x^2, -1) + eps) * w, x (M, N), w (N,).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from launch_helpers import broadcast_strides


@triton.jit
def row_kernel(
    # @slot params
    x_ptr, w_ptr, out_ptr, eps,
    # @end
    n_rows, n_cols,
    # @slot shape
    size0, size1,
    # @end
    # @slot strides
    x_st0, x_st1, w_st0, w_st1, out_st0, out_st1,
    # @end
    BLOCK_N: tl.constexpr, ROWS: tl.constexpr,
):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK_N)
    rmask = rows < n_rows
    mask = rmask[:, None] & (cols[None, :] < n_cols)
    # @slot index
    i0 = rows
    # @end
    # @slot body
    x = tl.load(x_ptr + (i0 * x_st0)[:, None] + cols[None, :] * x_st1, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + (i0 * w_st0)[:, None] + cols[None, :] * w_st1, mask=mask, other=0.0).to(tl.float32)
    ms = tl.sum(tl.where(mask, x * x, 0.0), axis=1)[:, None] / n_cols
    y = x * (1.0 / tl.sqrt(ms + eps)) * w
    tl.store(out_ptr + (i0 * out_st0)[:, None] + cols[None, :] * out_st1, y, mask=mask)
    # @end


def rms_norm(x: torch.Tensor, w: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    m, n = x.shape
    out = torch.empty((m, n), device=x.device, dtype=x.dtype)
    strides = []
    for t in (x, w, out):
        strides += broadcast_strides(t, 2)
    block_n = triton.next_power_of_2(n)
    rows = max(1, min(16, 2048 // block_n))
    row_kernel[(triton.cdiv(m, rows),)](x, w, out, eps, m, n, m, n, *strides, BLOCK_N=block_n, ROWS=rows, num_warps=4)
    return out
