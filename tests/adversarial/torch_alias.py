"""Obfuscated torch call through a module alias (peer-systems §3 A1, KernelGenBench L1)."""

import torch as T
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _touch(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.load(x_ptr + offs, mask=offs < n, other=0.0)


_centre = T.Tensor.sub


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        _touch[(triton.cdiv(x.numel(), 128),)](x, x.numel(), BLOCK=128)
        return _centre(x, T.mean(x, dim=-1, keepdim=True))
