import torch
import torch.nn as nn


class Model(nn.Module):
    """DLRM dot interaction: pairwise dots of [dense, sparse...] features, strictly upper triangle."""

    def __init__(self, num_features):
        super().__init__()
        self.num_features = num_features

    def forward(self, dense, sparse):
        t = torch.cat([dense.unsqueeze(1), sparse], dim=1)
        z = torch.bmm(t, t.transpose(1, 2))
        li, lj = torch.triu_indices(self.num_features, self.num_features, offset=1)
        return torch.cat([dense, z[:, li, lj]], dim=1)


def get_inputs():
    return [torch.randn(4, 16), torch.randn(4, 5, 16)]


def get_init_inputs():
    return [6]


def get_test_inputs():
    return [[torch.randn(3, 7), torch.randn(3, 5, 7)], [torch.randn(1, 16), torch.randn(1, 5, 16)]]
