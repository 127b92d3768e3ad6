import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, b):
        h = F.softplus(x) + F.hardswish(x) + F.elu(x) + F.leaky_relu(x, 0.2) + F.mish(x)
        h = h + F.relu(x + b) - torch.clamp(x, -0.5, 0.5).half().float() * 3
        return h / (1.0 + torch.abs(b)) + torch.erf(x) * torch.sign(x) + torch.log1p(torch.exp(-x.abs()))


def get_inputs():
    return [torch.randn(2, 3, 4, 5), torch.randn(3, 1, 1)]


def get_init_inputs():
    return []


def get_test_inputs():
    return [[torch.randn(1, 3, 1, 9), torch.randn(3, 1, 1)]]
