import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.cumsum(x, dim=1) + torch.sort(x, dim=1).values


def get_inputs():
    return [torch.randn(4, 6)]


def get_init_inputs():
    return []
