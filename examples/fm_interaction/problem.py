"""DeepFM factorization-machine interaction over pooled field embeddings.

emb: (B, F, D) fp32, one pooled embedding per sparse field. Output (B, 1):
0.5 * sum_d[(sum_f v_fd)^2 - sum_f v_fd^2]. Criteo-like shapes: F = 26 sparse fields, D = 16..128.
"""

from __future__ import annotations

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, emb: torch.Tensor) -> torch.Tensor:
        square_of_sum = emb.sum(dim=1).pow(2)
        sum_of_square = emb.pow(2).sum(dim=1)
        return 0.5 * (square_of_sum - sum_of_square).sum(dim=1, keepdim=True)


def get_init_inputs() -> list[object]:
    return []


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(256, 26, 16)]


def get_test_inputs() -> list[list[torch.Tensor]]:
    return [
        [torch.randn(1, 1, 1)],  # one field: the interaction is exactly 0
        [torch.randn(7, 39, 10)],  # Criteo's 13 dense + 26 sparse as fields; D not a power of two
        [torch.randn(3, 26, 300)],  # D longer than one block
        [torch.randn(5, 26, 128) * 30.0],  # large magnitudes
    ]


def get_benchmark_inputs() -> list[list[torch.Tensor]]:
    # 65536 x 26 x 128 fp32 = 832 MiB; 16384 x 26 x 64 fp32 = 104 MiB.
    return [[torch.randn(65536, 26, 128)], [torch.randn(16384, 26, 64)]]
