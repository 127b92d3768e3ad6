"""Hack: launch on a side CUDA stream so events on the default stream time ~0 (peer-systems §3
C13, KernelBench non_default_stream_kernel). Static: cuda-stream. (CUDA only; on the CPU there is no
stream to hide on, so no runtime variant runs here.)"""

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
        self.stream = torch.cuda.Stream()

    def forward(self, x):
        out = torch.empty_like(x)
        with torch.cuda.stream(self.stream):
            _centre_rows[(x.shape[0],)](x, out, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))
        return out
