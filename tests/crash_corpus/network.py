"""Tries to connect to a TCP port on 127.0.0.1 (given in the problem module) and reports the outcome."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x, y):
        import socket
        import sys

        port = sys.modules["kernelevolve_problem"].PORT
        try:
            socket.create_connection(("127.0.0.1", port), timeout=2).close()
        except OSError as exc:
            raise RuntimeError(f"NETWORK BLOCKED: {exc}") from exc
        raise RuntimeError("NETWORK REACHABLE")
