"""Hack: return a constant (peer-systems §3 B4, the Sakana case). torch.full is an allowed
allocation, so this passes static; random inputs make correctness fail."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _touch(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.load(x_ptr + offs, mask=offs < n, other=0.0)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        _touch[(triton.cdiv(x.numel(), 128),)](x, x.numel(), BLOCK=128)
        return torch.full(x.shape, 0.0, device=x.device, dtype=x.dtype)
