import torch
import torch.nn as nn

INT_INPUTS = [1]


class Model(nn.Module):
    """Jagged values -> padded dense (scaled) -> jagged again, as fbgemm's dense_to_jagged."""

    def __init__(self, max_len):
        super().__init__()
        self.max_len = max_len

    def forward(self, values, offsets):
        dense = torch.ops.aten._jagged_to_padded_dense_forward(values, [offsets], [self.max_len], 0.0)
        return torch.ops.aten._padded_dense_to_jagged_forward(torch.tanh(dense), [offsets], values.shape[0])


def get_inputs():
    return [torch.randn(10, 8), torch.tensor([0, 3, 3, 10])]


def get_init_inputs():
    return [7]


def get_test_inputs():
    return [[torch.randn(4, 3), torch.tensor([0, 4])]]
