"""Obfuscated torch call through getattr on a built string (peer-systems §3 A1)."""

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
        mean = getattr(x, "me" + "an")(dim=-1, keepdim=True)
        return getattr(x, "s" + "ub")(mean)
