"""Hack: keep the first output on self and return it again (peer-systems §3 B7). Static:
state-outside-init. Without static checks: stale output on fresh inputs (correctness)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _centre_rows(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    tl.store(out_ptr + row * n_cols + cols, x - tl.sum(x, axis=0) / n_cols, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.saved = None

    def forward(self, x):
        if self.saved is None or self.saved.shape != x.shape:
            out = torch.empty_like(x)
            _centre_rows[(x.shape[0],)](x, out, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))
            self.saved = out
        return self.saved
