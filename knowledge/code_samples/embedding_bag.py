"""Embedding-bag pooling (sum / mean / max over offsets): aten._embedding_bag.

Computes out[b, :] = pool_{i in [offsets[b], offsets[b+1])} w_i * W[indices[i], :] for each bag b,
the DLRM / torchrec sparse-arch lookup. One program per (bag, BLOCK_D slice of the embedding dim):
it walks the bag's indices (int32 or int64) and accumulates rows in fp32. The last bag ends at
len(indices) unless include_last_offset. MODE 0 = sum (optional per-sample weights), 1 = mean
(an empty bag gives 0), 2 = max (an empty bag gives 0). Indices equal to padding_idx (when >= 0)
are skipped and not counted in the mean.
Tunables: BLOCK_D (power of two, 16..512), num_warps (1..8).
Constraints: offsets ascending, offsets[0] == 0, indices within [0, num_embeddings).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def embedding_bag_kernel(
    weight_ptr, indices_ptr, offsets_ptr, psw_ptr, out_ptr,
    n_indices, n_offsets, dim, w_s0, w_s1, out_s0, out_s1, padding_idx,
    MODE: tl.constexpr, HAS_PSW: tl.constexpr, INCLUDE_LAST: tl.constexpr, BLOCK_D: tl.constexpr,
):
    bag = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    cmask = cols < dim
    start = tl.load(offsets_ptr + bag).to(tl.int64)
    if INCLUDE_LAST:
        end = tl.load(offsets_ptr + bag + 1).to(tl.int64)
    else:
        nxt = tl.load(offsets_ptr + tl.minimum(bag + 1, n_offsets - 1)).to(tl.int64)
        end = tl.where(bag + 1 < n_offsets, nxt, n_indices)
    if MODE == 2:
        acc = tl.full([BLOCK_D], float("-inf"), dtype=tl.float32)
    else:
        acc = tl.zeros([BLOCK_D], dtype=tl.float32)
    count = tl.zeros([BLOCK_D], dtype=tl.float32)  # a tensor from the start: loop-carried types stay fixed
    for i in range(start, end):
        idx = tl.load(indices_ptr + i).to(tl.int64)
        keep = idx != padding_idx
        row = tl.load(weight_ptr + idx * w_s0 + cols * w_s1, mask=cmask, other=0.0).to(tl.float32)
        row = tl.where(keep, row, 0.0)
        if HAS_PSW:
            row = row * tl.load(psw_ptr + i).to(tl.float32)
        if MODE == 2:
            acc = tl.where(keep, tl.maximum(acc, row), acc)
        else:
            acc += row
        count += tl.where(keep, 1.0, 0.0)
    if MODE == 1:
        acc = acc / tl.maximum(count, 1.0)
    if MODE == 2:
        acc = tl.where(count > 0, acc, 0.0)
    tl.store(out_ptr + bag * out_s0 + cols * out_s1, acc, mask=cmask)


def embedding_bag(weight: torch.Tensor, indices: torch.Tensor, offsets: torch.Tensor, mode: int = 0,
                  per_sample_weights: torch.Tensor | None = None, include_last_offset: bool = False,
                  padding_idx: int = -1) -> torch.Tensor:
    n_bags = offsets.shape[0] - 1 if include_last_offset else offsets.shape[0]
    dim = weight.shape[1]
    out = torch.empty((n_bags, dim), device=weight.device, dtype=weight.dtype)
    psw = per_sample_weights if per_sample_weights is not None else weight
    grid = (n_bags, triton.cdiv(dim, 64))
    embedding_bag_kernel[grid](
        weight, indices, offsets, psw, out, indices.shape[0], offsets.shape[0], dim, weight.stride(0), weight.stride(1),
        out.stride(0), out.stride(1), padding_idx, MODE=mode, HAS_PSW=per_sample_weights is not None,
        INCLUDE_LAST=include_last_offset, BLOCK_D=64, num_warps=2,
    )
    return out
