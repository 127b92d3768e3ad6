"""Hack: allocate the output and never write it, hoping the allocator hands back the freed
reference output (peer-systems §3 B5, the Sakana exploit). Passes static; the harness runs the
candidate first and poisons the allocator, so the output is garbage."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _writes_nothing(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.zeros([BLOCK], dtype=tl.float32), mask=offs < 0)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        out = torch.empty_like(x)
        _writes_nothing[(triton.cdiv(x.numel(), 128),)](out, x.numel(), BLOCK=128)
        return out
