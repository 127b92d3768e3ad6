"""EmbeddingBag, sum pooling over jagged bags (DLRM / TBE sparse features, one table).

indices: int64 (total_ids,), ids into the table; offsets: int64 (B,), the start of each bag in
``indices`` (torch's include_last_offset=False form: bag b ends where bag b+1 starts, the last bag
at ``len(indices)``). Empty bags pool to zeros. Table: 262144 x 128 fp32 = 128 MiB, twice the
H200's L2, so lookups are real HBM gathers.
"""

from __future__ import annotations

import torch
import torch.nn as nn

NUM_EMBEDDINGS = 262_144
DIM = 128
INT_INPUTS = [0, 1]


class Model(nn.Module):
    def __init__(self, num_embeddings: int, dim: int) -> None:
        super().__init__()
        self.bag = nn.EmbeddingBag(num_embeddings, dim, mode="sum")

    def forward(self, indices: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        return self.bag(indices, offsets)


def _bags(lengths: torch.Tensor) -> list[torch.Tensor]:
    offsets = torch.zeros(lengths.numel(), dtype=torch.int64)
    offsets[1:] = torch.cumsum(lengths, 0)[:-1]
    indices = torch.randint(0, NUM_EMBEDDINGS, (int(lengths.sum()),), dtype=torch.int64)
    return [indices, offsets]


def get_init_inputs() -> list[int]:
    return [NUM_EMBEDDINGS, DIM]


def get_inputs() -> list[torch.Tensor]:
    return _bags(torch.randint(0, 17, (64,)))  # 64 bags of 0..16 ids


def get_test_inputs() -> list[list[torch.Tensor]]:
    return [
        _bags(torch.tensor([0])),  # one empty bag
        _bags(torch.tensor([3, 0, 0, 5, 0])),  # empty bags in the middle and at the end
        _bags(torch.tensor([1])),
        _bags(torch.tensor([100, 1, 37])),  # a long bag spans several id blocks
        [
            torch.tensor([0, 0, NUM_EMBEDDINGS - 1, NUM_EMBEDDINGS - 1]),
            torch.tensor([0, 2]),
        ],  # repeats, last row
    ]


def get_benchmark_inputs() -> list[list[torch.Tensor]]:
    # B=16384 bags of 0..40 ids (~168 MB gathered); B=65536 with MLPerf DLRM-v2's mean multi-hot 8.
    return [_bags(torch.randint(0, 41, (16384,))), _bags(torch.randint(1, 16, (65536,)))]
