from __future__ import annotations

import torch
import torch.nn as nn
import triton
import triton.language as tl


def _configs():
    return [triton.Config({"BLOCK": b}, num_warps=w) for b in (64, 128) for w in (2, 4)]


@triton.autotune(configs=_configs(), key=["n_cols"])
@triton.heuristics({"EVEN": lambda args: args["n_cols"] % args["BLOCK"] == 0})
@triton.jit
def _rms_kernel(x_ptr, w_ptr, out_ptr, n_cols, stride, eps, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        acc += x * x
    rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / n_cols + eps)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=cols < n_cols, other=0.0)
        tl.store(out_ptr + row * stride + cols, _scale(x, rstd) * w, mask=cols < n_cols)


@triton.jit
def _scale(x, r):
    return x * r


def _launch(x: torch.Tensor, w, eps: float) -> torch.Tensor:
    x2 = x.reshape(-1, x.shape[-1]).contiguous()
    out = torch.empty_like(x2)
    n_rows, n_cols = x2.shape
    grid = lambda meta: (n_rows,)  # noqa: E731
    _rms_kernel[grid](x2, w, out, n_cols, x2.stride(0), eps)
    return out.view(x.shape)


class ModelNew(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.block = triton.next_power_of_2(dim) * 2

    def forward(self, x):
        if x.dtype not in (torch.float32, torch.float16):
            raise ValueError("unsupported dtype")
        n = x.numel() // x.shape[-1]
        assert n > 0
        return _launch(x, self.weight, self.eps)
