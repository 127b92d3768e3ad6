"""Elementwise add of two vectors: the smallest problem the engine tests evolve."""

from __future__ import annotations

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x + y


def get_init_inputs() -> list:
    return []


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(1 << 17), torch.randn(1 << 17)]

