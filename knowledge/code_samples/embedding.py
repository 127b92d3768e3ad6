"""Embedding lookup (pooling NONE, sequence embedding): aten.embedding, out[i, :] = W[idx[i], :].

One program per (BLOCK_R indices, BLOCK_D slice of the embedding dim); the indices tensor may have
any shape (it is read flat, so it must be contiguous) and the output is idx.shape + (D,).
Tunables: BLOCK_R (1..64), BLOCK_D (power of two, 16..512), num_warps (1..8).
Constraints: indices within [0, num_embeddings).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def embedding_kernel(weight_ptr, idx_ptr, out_ptr, n_idx, dim, w_s0, w_s1,
                     BLOCK_R: tl.constexpr, BLOCK_D: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    rmask = rows < n_idx
    mask = rmask[:, None] & (cols[None, :] < dim)
    idx = tl.load(idx_ptr + rows, mask=rmask, other=0).to(tl.int64)
    vals = tl.load(weight_ptr + idx[:, None] * w_s0 + cols[None, :] * w_s1, mask=mask, other=0.0)
    tl.store(out_ptr + rows[:, None] * dim + cols[None, :], vals, mask=mask)


def embedding(weight: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    dim = weight.shape[1]
    out = torch.empty(tuple(idx.shape) + (dim,), device=weight.device, dtype=weight.dtype)
    n = idx.numel()
    grid = (triton.cdiv(n, 16), triton.cdiv(dim, 64))
    embedding_kernel[grid](weight, idx, out, n, dim, weight.stride(0), weight.stride(1), BLOCK_R=16, BLOCK_D=64, num_warps=4)
    return out
