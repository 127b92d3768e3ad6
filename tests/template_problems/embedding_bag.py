import torch
import torch.nn as nn
import torch.nn.functional as F

INT_INPUTS = [0, 1]


class Model(nn.Module):
    def __init__(self, num_embeddings, dim):
        super().__init__()
        self.table = nn.Parameter(torch.randn(num_embeddings, dim))

    def forward(self, indices, offsets):
        return F.embedding_bag(indices, self.table, offsets, mode="mean")


def get_inputs():
    return [torch.randint(0, 50, (20,)), torch.tensor([0, 4, 4, 9, 15])]


def get_init_inputs():
    return [50, 24]


def get_test_inputs():
    return [[torch.randint(0, 50, (3,)), torch.tensor([0, 1, 3])]]
