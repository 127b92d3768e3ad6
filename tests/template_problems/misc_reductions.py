import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        unit = F.normalize(x, dim=-1)  # linalg_vector_norm, clamp_min, expand, div
        spread = x.var(dim=-1, keepdim=True) + x.std(dim=-1, keepdim=True)
        lse = torch.logsumexp(y, dim=1)  # over the middle dim of a 3-D tensor
        mid = F.log_softmax(y, dim=1)
        far = torch.linalg.vector_norm(x, ord=float("inf"), dim=-1, keepdim=True)
        return unit * spread + far, lse, mid, torch.argmin(y, dim=1, keepdim=True)


def get_inputs():
    return [torch.randn(4, 33), torch.randn(2, 9, 5)]


def get_init_inputs():
    return []


def get_test_inputs():
    return [[torch.randn(1, 7), torch.randn(3, 2, 4)]]
