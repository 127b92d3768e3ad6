import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Transformer MLP half: 3-D nn.Linear, GELU and a residual (view -> addmm -> view -> epilogue)."""

    def __init__(self, d_model, d_ff):
        super().__init__()
        self.up = nn.Linear(d_model, d_ff)

    def forward(self, x, residual):
        return F.gelu(self.up(x)) + residual


def get_inputs():
    return [torch.randn(2, 7, 24), torch.randn(2, 7, 40)]


def get_init_inputs():
    return [24, 40]


def get_test_inputs():
    return [[torch.randn(3, 1, 24), torch.randn(40)]]
