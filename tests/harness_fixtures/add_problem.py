"""Tiny problem for harness tests: elementwise add of two small vectors."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, y):
        return x + y


def get_inputs():
    return [torch.randn(37), torch.randn(37)]


def get_init_inputs():
    return []


def get_test_inputs():
    return [[torch.randn(5), torch.randn(5)], [torch.randn(130), torch.randn(130)]]
