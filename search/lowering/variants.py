"""Launch settings that distinguish the draft candidates of one lowering (tile sizes, warps)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Variant:
    name: str
    pw_block: int = 1024
    pw_warps: int = 4
    row_warps: int = 4
    row_rows: int = 16  # at most this many rows per program...
    row_elems: int = 2048  # ...and at most this many row elements per program
    flat_block: int = 1024
    flat_warps: int = 4
    gemm: tuple[int, int, int, int, int, int] = (64, 64, 32, 8, 4, 3)  # BM, BN, BK, GROUP_M, warps, stages
    sparse_block_d: int = 64
    sparse_warps: int = 2


# Every setting changes from one variant to the next, so the drafts of any graph differ.
VARIANTS: list[Variant] = [
    Variant("balanced"),
    Variant("wide", 2048, 8, 8, 32, 8192, 2048, 8, (128, 64, 32, 8, 8, 3), 128, 4),
    Variant("narrow", 512, 2, 2, 4, 1024, 512, 2, (32, 32, 32, 4, 2, 2), 32, 1),
    Variant("tall-tiles", 256, 1, 1, 1, 512, 256, 1, (128, 128, 32, 8, 8, 4), 256, 8),
    Variant("deep-k", 4096, 8, 16, 64, 16384, 4096, 8, (64, 128, 64, 4, 4, 4), 16, 2),
    Variant("small-tiles", 1024, 2, 8, 8, 4096, 512, 4, (32, 64, 64, 8, 4, 2), 64, 4),
]
