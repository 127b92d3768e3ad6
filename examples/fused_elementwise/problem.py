"""Fused elementwise chain: gelu(x * scale + bias) + residual, bias broadcast over rows.

A typical transformer/MLP epilogue: eager PyTorch runs four kernels and reads/writes the
intermediate three times; one fused kernel reads x, bias, residual once and writes once.
"""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, scale: float) -> None:
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor, bias: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return F.gelu(x * self.scale + bias) + residual


def _inputs(rows: int, cols: int, dtype: torch.dtype = torch.float32) -> list[torch.Tensor]:
    return [
        torch.randn(rows, cols, dtype=dtype),
        torch.randn(cols, dtype=dtype),
        torch.randn(rows, cols, dtype=dtype),
    ]


def get_init_inputs() -> list[float]:
    return [0.5]


def get_inputs() -> list[torch.Tensor]:
    return _inputs(256, 1024)


def get_test_inputs() -> list[list[torch.Tensor]]:
    big = _inputs(5, 33)
    big[0] = big[0] * 50.0  # gelu's saturated tails
    return [_inputs(1, 1), _inputs(37, 1000), _inputs(3, 4097), big]


def get_benchmark_inputs() -> list[list[torch.Tensor]]:
    # 8192 x 8192 fp32: 256 MiB per tensor, far beyond the H200's 60 MB L2.
    return [_inputs(8192, 8192), _inputs(16384, 4096)]
