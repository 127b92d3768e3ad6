"""Tiny CLI test problem: relu(x + y) on small float32 tensors (fast under TRITON_INTERPRET=1)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.relu(x + y)


def get_init_inputs() -> list:
    return []


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(4, 33), torch.randn(4, 33)]


def get_test_inputs() -> list[list[torch.Tensor]]:
    return [[torch.randn(1), torch.randn(1)], [torch.randn(3, 70), torch.randn(3, 70)]]
