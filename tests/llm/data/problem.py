"""y = x * 2 + 1 over a 1-D fp32 tensor: the smallest problem the LLM operator tests drive."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 2.0 + 1.0


def get_inputs():
    return [torch.randn(1000)]


def get_init_inputs():
    return []


def get_test_inputs():
    return [[torch.randn(37)], [torch.randn(1)]]
