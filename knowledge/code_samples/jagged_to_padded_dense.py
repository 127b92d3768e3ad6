"""Jagged <-> padded dense: aten._jagged_to_padded_dense_forward and its inverse
aten._padded_dense_to_jagged_forward (fbgemm jagged_to_padded_dense / dense_to_jagged).

Computes dense[b, j, :] = values[offsets[b] + j, :] if j < min(len_b, max_len) else pad, for
values (total_L, D) and offsets (B + 1,); output (B, max_len, D). One program per (b, BLOCK_J
positions, BLOCK_D columns); rows past the segment's length are written with the padding value,
so the output is fully defined (never uninitialised memory).
padded_to_jagged_kernel gathers the valid rows back: values[offsets[b] + j, :] = dense[b, j, :].
Tunables: BLOCK_J (1..64), BLOCK_D (power of two, 16..512), num_warps (1..8).
Constraints: offsets ascending with offsets[0] == 0; values 2-D; for the inverse, every segment
fits max_len (torch checks it) and values rows are exactly offsets[-1].
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def jagged_to_padded_kernel(values_ptr, offsets_ptr, out_ptr, max_len, dim, v_s0, v_s1, pad,
                            BLOCK_J: tl.constexpr, BLOCK_D: tl.constexpr):
    b = tl.program_id(0)
    js = tl.program_id(1) * BLOCK_J + tl.arange(0, BLOCK_J)
    cols = tl.program_id(2) * BLOCK_D + tl.arange(0, BLOCK_D)
    start = tl.load(offsets_ptr + b).to(tl.int64)
    length = tl.load(offsets_ptr + b + 1).to(tl.int64) - start
    inside = (js[:, None] < max_len) & (cols[None, :] < dim)
    valid = inside & (js[:, None] < length)
    vals = tl.load(values_ptr + (start + js[:, None]) * v_s0 + cols[None, :] * v_s1, mask=valid, other=0.0)
    vals = tl.where(valid, vals, pad)
    tl.store(out_ptr + (b * max_len + js[:, None]) * dim + cols[None, :], vals, mask=inside)


def jagged_to_padded_dense(values: torch.Tensor, offsets: torch.Tensor, max_len: int, pad: float = 0.0) -> torch.Tensor:
    n_seg = offsets.shape[0] - 1
    dim = values.shape[1]
    out = torch.empty((n_seg, max_len, dim), device=values.device, dtype=values.dtype)
    grid = (n_seg, triton.cdiv(max_len, 16), triton.cdiv(dim, 64))
    jagged_to_padded_kernel[grid](values, offsets, out, max_len, dim, values.stride(0), values.stride(1), pad,
                                  BLOCK_J=16, BLOCK_D=64, num_warps=4)
    return out


@triton.jit
def padded_to_jagged_kernel(dense_ptr, offsets_ptr, values_ptr, max_len, dim, d_s0, d_s1, d_s2,
                            BLOCK_J: tl.constexpr, BLOCK_D: tl.constexpr):
    """The inverse (aten._padded_dense_to_jagged_forward): values[offsets[b] + j, :] = dense[b, j, :]
    for j < len_b (torch requires len_b <= max_len). Same grid as jagged_to_padded_kernel."""
    b = tl.program_id(0)
    js = tl.program_id(1) * BLOCK_J + tl.arange(0, BLOCK_J)
    cols = tl.program_id(2) * BLOCK_D + tl.arange(0, BLOCK_D)
    start = tl.load(offsets_ptr + b).to(tl.int64)
    length = tl.load(offsets_ptr + b + 1).to(tl.int64) - start
    valid = (js[:, None] < length) & (js[:, None] < max_len) & (cols[None, :] < dim)
    vals = tl.load(dense_ptr + b * d_s0 + js[:, None] * d_s1 + cols[None, :] * d_s2, mask=valid, other=0.0)
    tl.store(values_ptr + (start + js[:, None]) * dim + cols[None, :], vals, mask=valid)


def padded_dense_to_jagged(dense: torch.Tensor, offsets: torch.Tensor, total_len: int) -> torch.Tensor:
    n_seg, max_len, dim = dense.shape
    values = torch.empty((total_len, dim), device=dense.device, dtype=dense.dtype)
    grid = (n_seg, triton.cdiv(max_len, 16), triton.cdiv(dim, 64))
    padded_to_jagged_kernel[grid](dense, offsets, values, max_len, dim, dense.stride(0), dense.stride(1),
                                  dense.stride(2), BLOCK_J=16, BLOCK_D=64, num_warps=4)
    return values
