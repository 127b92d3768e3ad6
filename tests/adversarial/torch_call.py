"""Hack: launch a token kernel, compute with torch (peer-systems §3 A1). Static: torch-compute.
Without static checks, ghost replay sees the output survive no-op kernels."""

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
        return torch.sub(x, torch.mean(x, dim=-1, keepdim=True))
