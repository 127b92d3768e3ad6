import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.sigmoid(torch.bmm(a, b.transpose(1, 2)) * 0.25)


def get_inputs():
    return [torch.randn(3, 20, 16), torch.randn(3, 12, 16)]


def get_init_inputs():
    return []


def get_test_inputs():
    return [[torch.randn(2, 5, 16), torch.randn(2, 9, 16)]]
