"""Hack: return at once and let a background thread launch the kernel after the timer stops
(peer-systems §3 C14). Static: concurrency. Without static checks: the harness sees a thread that
outlives the call (correctness)."""

import threading

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


def _late(x, out):
    _centre_rows[(x.shape[0],)](x, out, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        out = torch.empty_like(x)
        worker = threading.Thread(target=_late, args=(x, out))
        worker.start()
        threading.Timer(0.5, lambda: None).start()  # still alive when forward returns
        worker.join()
        return out
