"""Hack: zero the input inside the kernel and return zeros, so a reference run afterwards on the
same tensor also returns zeros (peer-systems §3 B6, KernelBench zero_out_kernel). Passes static;
the harness compares inputs with pristine copies and computes the reference on clones."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _zero_both(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    zero = tl.zeros([BLOCK], dtype=tl.float32)
    tl.store(x_ptr + offs, zero, mask=mask)
    tl.store(out_ptr + offs, zero, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        out = torch.empty_like(x)
        _zero_both[(triton.cdiv(x.numel(), 128),)](x, out, x.numel(), BLOCK=128)
        return out
