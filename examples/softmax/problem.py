"""Row softmax over the last dimension, fp32 (KernelBench level 1 style)."""

from __future__ import annotations

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)


def get_init_inputs() -> list[object]:
    return []


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(128, 1000)]


def get_test_inputs() -> list[list[torch.Tensor]]:
    spiky = torch.randn(4, 3000) * 40.0  # exp overflows without the max subtraction
    spiky[:, 7] = 200.0
    return [
        [torch.randn(1, 1)],
        [torch.randn(33, 17)],
        [torch.randn(5, 4099)],  # longer than one block: the online (looped) path
        [spiky],
        [torch.randn(2, 3, 257)],  # leading dims are flattened
    ]


def get_benchmark_inputs() -> list[list[torch.Tensor]]:
    # 8192 x 8192 fp32 = 256 MiB; 65536 x 1024 fp32 = 256 MiB (short rows, many programs).
    return [[torch.randn(8192, 8192)], [torch.randn(65536, 1024)]]
