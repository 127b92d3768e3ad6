"""Linear layer with a fused epilogue: relu(x @ W^T + b), fp16 in and out (fp32 accumulation).

fp16 because that is how such layers run on a GPU, and because the CPU interpreter supports
fp16 ``tl.dot`` too. Eager PyTorch runs cuBLAS then a separate bias+relu pass (or addmm then
relu); the candidate fuses bias and relu into the GEMM's epilogue.
"""

from __future__ import annotations

import torch
import torch.nn as nn

IN_FEATURES = 256
OUT_FEATURES = 384


class Model(nn.Module):
    def __init__(self, in_features: int, out_features: int) -> None:
        super().__init__()
        self.linear = nn.Linear(in_features, out_features, dtype=torch.float16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.linear(x))


def get_init_inputs() -> list[int]:
    return [IN_FEATURES, OUT_FEATURES]


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(128, IN_FEATURES, dtype=torch.float16)]


def get_test_inputs() -> list[list[torch.Tensor]]:
    return [
        [torch.randn(1, IN_FEATURES, dtype=torch.float16)],
        [torch.randn(33, IN_FEATURES, dtype=torch.float16)],  # M not a multiple of the tile
        [torch.randn(2, 5, IN_FEATURES, dtype=torch.float16)],  # leading dims are flattened
    ]


def get_benchmark_inputs() -> list[list[torch.Tensor]]:
    # The layer's shape is fixed by get_init_inputs(); production sizes vary the token count.
    # 65536 x 256 fp16 in (32 MiB) and 65536 x 384 out (48 MiB), plus the weight.
    return [
        [torch.randn(65536, IN_FEATURES, dtype=torch.float16)],
        [torch.randn(262144, IN_FEATURES, dtype=torch.float16)],
    ]
