"""The target of the adversarial corpus: centre each row of an fp32 matrix (y = x - mean(x, -1)).

Small on purpose (the corpus runs in Triton's CPU interpreter). get_test_inputs() holds odd and
edge sizes so that shape specialisation and constant outputs cannot pass.
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x - x.mean(dim=-1, keepdim=True)


def get_init_inputs():
    return []


def get_inputs():
    return [torch.randn(8, 64)]


def get_test_inputs():
    return [[torch.randn(3, 5)], [torch.randn(1, 1)], [torch.randn(5, 100) * 10.0]]
