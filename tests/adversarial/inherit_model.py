"""Hack: copy the reference and inherit it with `pass` (peer-systems §3 A3, Kevin). Without static
checks: no Triton kernel is ever launched (ghost stage)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _unused(x_ptr):
    pass


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x - x.mean(dim=-1, keepdim=True)


class ModelNew(Model):
    pass
