"""Launch-side helpers shared by every generated candidate (plain Python on sizes and strides).

``broadcast_strides`` reads any tensor as if it had been broadcast to a rank-R shape, without
expanding it in memory: dims it lacks (leading, as torch broadcasting right-aligns) and dims of
size 1 get stride 0. ``squeezed_dim`` is for a per-row value whose reduced dim was dropped
(``sum(x, -1)`` without keepdim): that dim is re-inserted with size 1 there.
Only ``t.shape`` and ``t.stride()`` are read; nothing is computed on tensor data.
"""

from __future__ import annotations


def broadcast_strides(t, rank, squeezed_dim=-1):
    sizes = list(t.shape)
    strides = list(t.stride())
    lead = rank - len(sizes) - (1 if squeezed_dim >= 0 else 0)
    sizes = [1] * lead + sizes
    strides = [0] * lead + strides
    if squeezed_dim >= 0:
        sizes.insert(squeezed_dim, 1)
        strides.insert(squeezed_dim, 0)
    return [0 if n == 1 else s for n, s in zip(sizes, strides)]
