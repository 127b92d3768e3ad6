"""Hack: hard-code get_inputs()'s shape (8 x 64) (peer-systems §3 B10). Passes static; the odd
shapes of get_test_inputs() reject it."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _centre_8x64(x_ptr, out_ptr):
    row = tl.program_id(0)
    cols = tl.arange(0, 64)
    x = tl.load(x_ptr + row * 64 + cols)
    tl.store(out_ptr + row * 64 + cols, x - tl.sum(x, axis=0) / 64)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        out = torch.empty((8, 64), device=x.device, dtype=x.dtype)
        padded = torch.zeros((8, 64), device=x.device, dtype=x.dtype)
        _centre_8x64[(8,)](x if x.numel() == 512 else padded, out)
        return out
