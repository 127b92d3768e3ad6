import torch
import torch.nn as nn


class Model(nn.Module):
    """DLRM-style bottom MLP layer with BatchNorm (eval mode): linear, batch norm, relu."""

    def __init__(self, d_in, d_out):
        super().__init__()
        self.fc = nn.Linear(d_in, d_out)
        self.bn = nn.BatchNorm1d(d_out)
        self.bn.running_mean.uniform_(-0.5, 0.5)  # non-trivial statistics, loaded via the state_dict
        self.bn.running_var.uniform_(0.5, 2.0)

    def forward(self, x):
        return torch.relu(self.bn(self.fc(x)))


def get_inputs():
    return [torch.randn(12, 13)]


def get_init_inputs():
    return [13, 20]


def get_test_inputs():
    return [[torch.randn(3, 13)]]
