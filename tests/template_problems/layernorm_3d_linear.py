import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.proj = nn.Linear(d_in, d_out, bias=False)
        self.norm = nn.LayerNorm(d_out)

    def forward(self, x):
        return self.norm(torch.relu(self.proj(x)))


def get_inputs():
    return [torch.randn(2, 6, 16)]


def get_init_inputs():
    return [16, 24]


def get_test_inputs():
    return [[torch.randn(3, 5, 16)]]
