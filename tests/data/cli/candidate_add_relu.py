"""Honest candidate for problem_add_relu.py: one fused add + relu kernel."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _add_relu_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    y = tl.load(y_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, tl.maximum(x + y, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = y.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        _add_relu_kernel[(triton.cdiv(n, 128),)](x, y, out, n, BLOCK=128)
        return out
