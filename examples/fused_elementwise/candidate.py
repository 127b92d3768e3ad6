"""One pass over memory: load x, bias (broadcast by column) and residual, write the result."""

from __future__ import annotations

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _gelu_bias_residual_kernel(
    x_ptr, bias_ptr, res_ptr, out_ptr, n_elements, n_cols, scale, BLOCK: tl.constexpr
):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(bias_ptr + offs % n_cols, mask=mask, other=0.0).to(tl.float32)
    r = tl.load(res_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    y = x * scale + b
    y = 0.5 * y * (1.0 + tl.erf(y * 0.7071067811865476))  # exact (erf) gelu, as F.gelu
    tl.store(out_ptr + offs, y + r, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, scale: float) -> None:
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor, bias: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        residual = residual.contiguous()
        bias = bias.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        block = 1024

        def grid(meta):
            return (triton.cdiv(n, meta["BLOCK"]),)

        _gelu_bias_residual_kernel[grid](
            x, bias, residual, out, n, x.shape[-1], self.scale, BLOCK=block, num_warps=4
        )
        return out
