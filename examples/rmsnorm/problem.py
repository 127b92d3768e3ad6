"""RMSNorm over the last dimension (LLaMA style): statistics in fp32, output in the input dtype.

y = (x / sqrt(mean(x^2) + eps)) * weight. The reference upcasts to fp32 for the statistics, as
production implementations do, so fp16/bf16 sets check the same maths at half precision.
"""

from __future__ import annotations

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xf = x.float()
        rstd = torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return (xf * rstd * self.weight.float()).to(x.dtype)


DIM = 1000  # not a power of two, so the masked tail is always exercised


def get_init_inputs() -> list[int]:
    return [DIM]


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(64, DIM)]


def get_test_inputs() -> list[list[torch.Tensor]]:
    return [
        [torch.randn(1, DIM)],
        [torch.randn(3, 5, DIM)],  # leading dims are flattened
        [torch.randn(37, DIM) * 1e3],  # large magnitudes
        [torch.randn(11, DIM) * 1e-3],  # tiny magnitudes: eps matters
        [torch.randn(16, DIM, dtype=torch.float16)],
        [torch.randn(16, DIM, dtype=torch.bfloat16)],
    ]


def get_benchmark_inputs() -> list[list[torch.Tensor]]:
    # 32768 x 1000 fp32 = 125 MiB, bf16 65536 x 1000 = 125 MiB: both beyond the 60 MB L2.
    return [[torch.randn(32768, DIM)], [torch.randn(65536, DIM, dtype=torch.bfloat16)]]
