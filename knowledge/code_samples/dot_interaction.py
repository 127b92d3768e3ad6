"""DLRM dot interaction pieces: pack the strict upper triangle of Z = T T^T, and concatenate.

triu_pack_kernel computes out[b, p] = Z[b, i, j] for the pairs i < j in row-major order (the
order of torch.triu_indices(n, n, offset=1)), which is what DLRM's InteractionArch gathers after
bmm(T, T^T): p = i*n - i*(i+1)/2 + (j - i - 1). One program per (b, i); lanes run over j.
cat_copy_kernel copies one input of a concatenation into its column range of the output, with
both viewed as (outer, inner) rows: dst[o, offset + c] = src[o, c].
Tunables: BLOCK (power of two >= n for triu_pack; 64..4096 for cat_copy), num_warps (1..8).
Constraints: Z is (B, n, n) with any strides; cat inputs must be viewable as (outer, inner),
i.e. contiguous from the cat dim on.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def triu_pack_kernel(z_ptr, out_ptr, n, z_s0, z_s1, z_s2, out_s0, out_s1, BLOCK: tl.constexpr):
    b = tl.program_id(0)
    i = tl.program_id(1)
    j = tl.arange(0, BLOCK)
    keep = (j > i) & (j < n)
    vals = tl.load(z_ptr + b * z_s0 + i * z_s1 + j * z_s2, mask=keep, other=0.0)
    p = i * n - (i * (i + 1)) // 2 + (j - i - 1)
    tl.store(out_ptr + b * out_s0 + p * out_s1, vals, mask=keep)


@triton.jit
def cat_copy_kernel(src_ptr, dst_ptr, inner, src_s0, dst_s0, offset, BLOCK: tl.constexpr):
    o = tl.program_id(0)
    c = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = c < inner
    vals = tl.load(src_ptr + o * src_s0 + c, mask=mask, other=0)
    tl.store(dst_ptr + o * dst_s0 + offset + c, vals, mask=mask)


def interaction_output(dense: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
    """cat([dense, Z[:, li, lj]], 1) for DLRM: dense (B, D), z (B, n, n)."""
    batch, n = z.shape[0], z.shape[1]
    pairs = n * (n - 1) // 2
    tri = torch.empty((batch, pairs), device=z.device, dtype=z.dtype)
    triu_pack_kernel[(batch, n)](
        z, tri, n, z.stride(0), z.stride(1), z.stride(2), tri.stride(0), tri.stride(1),
        BLOCK=triton.next_power_of_2(n), num_warps=1,
    )
    width = dense.shape[1] + pairs
    out = torch.empty((batch, width), device=z.device, dtype=z.dtype)
    offset = 0
    for piece in (dense, tri):
        inner = piece.shape[1]
        cat_copy_kernel[(batch, triton.cdiv(inner, 256))](piece, out, inner, piece.stride(0), out.stride(0), offset, BLOCK=256, num_warps=2)
        offset += inner
    return out
