import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.autotune(
    configs=[
        triton.Config({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_SIZE_M": 8}, num_warps=4, num_stages=3),
    ],
    key=["M", "N", "K"],
)
@triton.jit
def matmul_kernel(a, b, c, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                  GROUP_SIZE_M: tl.constexpr):
    pass


@triton.jit
def scale_kernel(x, out, n, BLOCK: tl.constexpr = 128):
    pass


class ModelNew(nn.Module):
    def forward(self, a, b):  # comment with ünïcödé so byte offsets differ from char offsets
        c = torch.empty((a.shape[0], b.shape[1]), device=a.device, dtype=a.dtype)
        matmul_kernel[(1,)](a, b, c, a.shape[0], b.shape[1], a.shape[1])
        tile = 64
        scale_kernel[(1,)](c, c, c.numel(),)
        scale_kernel[(2,)](c, c, c.numel(), tile, num_warps=2, num_stages=2)
        return c
