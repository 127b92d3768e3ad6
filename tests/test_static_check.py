"""The static anti-cheat: every rule fires on the hack it names and stays quiet on honest code.

Each forbidden snippet is paired, where it matters, with the nearest honest spelling that must
pass; whole honest candidates (the bundled examples, autotuned/heuristic/2-D-grid kernels) must
produce no violation at all.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from kernelevolve.search.static_check import Violation, check, format_violations

ROOT = Path(__file__).resolve().parent.parent

HEAD = """\
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)

"""


def model(forward: str, init: str = "", args: str = "x") -> str:
    """A ModelNew whose forward body (and optional __init__ body) is given, indented by 8."""
    init_body = "        super().__init__()\n" + init
    return (
        f"class ModelNew(nn.Module):\n    def __init__(self):\n{init_body}\n"
        f"    def forward(self, {args}):\n{forward}"
    )


def launch(out: str = "out", src: str = "x") -> str:
    return f"        kernel[(triton.cdiv({src}.numel(), 128),)]({src}, {out}, {src}.numel(), BLOCK=128)\n"


ALLOC = "        out = torch.empty_like(x)\n"


def rules(body: str) -> set[str]:
    return {v.rule for v in check(HEAD + body)}


# --- forbidden: (rule, snippet after HEAD) ---------------------------------------------------------

FORBIDDEN: dict[str, tuple[str, str]] = {
    "torch_function": ("torch-compute", model("        return torch.matmul(x, x)\n")),
    "functional": ("torch-compute", "import torch.nn.functional as F\n" + model("        return F.relu(x)\n")),
    "aten_op": ("torch-compute", model("        return torch.ops.aten.add.Tensor(x, x)\n")),
    "torch_function_reference": ("torch-compute", "f = torch.matmul\n" + model("        return f(x, x)\n")),
    "layer_built_in_forward": ("torch-compute", model("        return nn.Linear(4, 4)(x)\n")),
    "submodule_call": ("torch-compute", model("        return self.lin(x)\n", init="        self.lin = nn.Linear(4, 4)\n")),
    "torch_in_kernel": (
        "torch-compute",
        "@triton.jit\ndef k2(x_ptr):\n    torch.relu(x_ptr)\n\n\n" + model(ALLOC + launch() + "        return out\n"),
    ),
    "module_alias_import": ("alias", "import torch as T\n" + model(ALLOC + launch() + "        return out\n")),
    "from_import_alias": ("alias", "from torch import nn as q\n" + model(ALLOC + launch() + "        return out\n")),
    "module_as_value": ("alias", model("        lib = torch\n        return lib.relu(x)\n")),
    "star_import": ("alias", "from triton.language import *\n" + model(ALLOC + launch() + "        return out\n")),
    "getattr": ("introspection", model("        return getattr(x, 'sum')()\n")),
    "setattr": ("introspection", model(ALLOC + launch() + "        setattr(x, 'y', 1)\n        return out\n")),
    "dunder_attribute": ("introspection", model("        return x.__class__.__mro__[1]\n")),
    "dunder_dict": ("introspection", model(ALLOC + launch() + "        d = self.__dict__\n        return out\n")),
    "globals": ("introspection", model(ALLOC + launch() + "        g = globals()\n        return out\n")),
    "vars": ("introspection", model(ALLOC + launch() + "        v = vars(self)\n        return out\n")),
    "id_keyed_cache": ("introspection", model(ALLOC + launch() + "        key = id(x)\n        return out\n")),
    "dunder_method": (
        "introspection",
        model(ALLOC + launch() + "        return out\n") + "\n    def __getattr__(self, name):\n        return 1\n",
    ),
    "dunder_import": ("dynamic-import", model("        return __import__('torch').relu(x)\n")),
    "importlib": ("dynamic-import", "import importlib\n" + model(ALLOC + launch() + "        return out\n")),
    "eval": ("dynamic-code", model("        return eval('x + x')\n")),
    "exec": ("dynamic-code", model(ALLOC + launch() + "        exec('pass')\n        return out\n")),
    "compile": ("dynamic-code", model(ALLOC + launch() + "        c = compile('1', 's', 'eval')\n        return out\n")),
    "try_except": (
        "try-except",
        model("        out = torch.empty_like(x)\n        try:\n    " + launch() + "        except Exception:\n"
              "            pass\n        return out\n"),
    ),  # fmt: skip
    "try_finally": (
        "try-except",
        model("        out = torch.empty_like(x)\n        try:\n    " + launch() + "        finally:\n"
              "            pass\n        return out\n"),
    ),  # fmt: skip
    "inherit_reference": ("inheritance", "class Model(nn.Module):\n    pass\n\n\nclass ModelNew(Model):\n    pass\n"),
    "inherit_tensor": ("inheritance", "class Lazy(torch.Tensor):\n    pass\n\n\n" + model("        return x\n")),
    "metaclass": ("inheritance", "class ModelNew(nn.Module, metaclass=type):\n    def forward(self, x):\n        return x\n"),
    "pass_forward": ("empty-forward", model("        pass\n")),
    "docstring_forward": ("empty-forward", model('        """Nothing."""\n')),
    "no_forward": ("empty-forward", "class ModelNew(nn.Module):\n    pass\n"),
    "threading": ("concurrency", "import threading\n" + model(ALLOC + launch() + "        return out\n")),
    "multiprocessing": ("concurrency", "import multiprocessing\n" + model(ALLOC + launch() + "        return out\n")),
    "concurrent_futures": (
        "concurrency",
        "from concurrent.futures import ThreadPoolExecutor\n" + model(ALLOC + launch() + "        return out\n"),
    ),
    "subprocess": ("concurrency", "import subprocess\n" + model(ALLOC + launch() + "        return out\n")),
    "asyncio": ("concurrency", "import asyncio\n" + model(ALLOC + launch() + "        return out\n")),
    "async_def": ("concurrency", "async def helper():\n    pass\n\n\n" + model(ALLOC + launch() + "        return out\n")),
    "os_fork": ("concurrency", "import os\n" + model(ALLOC + launch() + "        os.fork()\n        return out\n")),
    "signal": ("concurrency", "import signal\n" + model(ALLOC + launch() + "        return out\n")),
    "cuda_stream": ("cuda-stream", model(ALLOC + "        s = torch.cuda.Stream()\n" + launch() + "        return out\n")),
    "cuda_stream_context": (
        "cuda-stream",
        model(ALLOC + "        with torch.cuda.stream(torch.cuda.current_stream()):\n    " + launch() + "        return out\n"),
    ),
    "cuda_event": ("cuda-stream", model(ALLOC + "        e = torch.cuda.Event()\n" + launch() + "        return out\n")),
    "cuda_graph": ("cuda-stream", model(ALLOC + "        g = torch.cuda.CUDAGraph()\n" + launch() + "        return out\n")),
    "synchronize": ("cuda-stream", model(ALLOC + launch() + "        torch.cuda.synchronize()\n        return out\n")),
    "ctypes": ("native-code", "import ctypes\n" + model(ALLOC + launch() + "        return out\n")),
    "cffi": ("native-code", "import cffi\n" + model(ALLOC + launch() + "        return out\n")),
    "cpp_extension": (
        "native-code",
        model(ALLOC + launch() + "        m = torch.utils.cpp_extension.load_inline('m', '')\n        return out\n"),
    ),
    "inspect": ("frame-inspection", "import inspect\n" + model(ALLOC + launch() + "        return out\n")),
    "sys_getframe": ("frame-inspection", "import sys\n" + model("        return sys._getframe(1).f_locals['ref']\n")),
    "f_back_attribute": ("frame-inspection", model("        return self.frame.f_back\n")),
    "gc": ("frame-inspection", "import gc\n" + model(ALLOC + launch() + "        return out\n")),
    "traceback": ("frame-inspection", "import traceback\n" + model(ALLOC + launch() + "        return out\n")),
    "open": ("io", model(ALLOC + launch() + "        open('/tmp/x', 'w')\n        return out\n")),
    "pathlib": ("io", "from pathlib import Path\n" + model(ALLOC + launch() + "        return out\n")),
    "socket": ("io", "import socket\n" + model(ALLOC + launch() + "        return out\n")),
    "pickle": ("io", "import pickle\n" + model(ALLOC + launch() + "        return out\n")),
    "urllib": ("io", "import urllib.request\n" + model(ALLOC + launch() + "        return out\n")),
    "timer_patch": ("module-patch", "import time\ntime.perf_counter = lambda: 0.0\n" + model("        return x\n")),
    "event_patch": ("module-patch", "torch.cuda.Event.elapsed_time = lambda s, e: 1e-6\n" + model("        return x\n")),
    "triton_patch": ("module-patch", "triton.testing.do_bench = lambda f: 1e-6\n" + model("        return x\n")),
    "tf32_flag": ("module-patch", "torch.backends.cuda.matmul.allow_tf32 = True\n" + model("        return x\n")),
    "del_module_attribute": ("module-patch", "del torch.cuda.Event\n" + model("        return x\n")),
    "time_import": ("timer", "import time\n" + model(ALLOC + launch() + "        return out\n")),
    "global": ("global-statement", "N = 0\n" + model("        global N\n        N = 1\n" + ALLOC + launch() + "        return out\n")),
    "nonlocal": (
        "global-statement",
        model("        n = 0\n\n        def bump():\n            nonlocal n\n            n = 1\n\n" + ALLOC + launch() + "        return out\n"),
    ),
    "state_on_self": ("state-outside-init", model(ALLOC + launch() + "        self.last = out\n        return out\n")),
    "container_on_self": (
        "state-outside-init",
        model(ALLOC + launch() + "        self.seen.append(out)\n        return out\n", init="        self.seen = None\n"),
    ),
    "subscript_on_self": (
        "state-outside-init",
        model(ALLOC + launch() + "        self.cache[0] = out\n        return out\n", init="        self.cache = None\n"),
    ),
    "module_dict_write": (
        "module-state",
        "_CACHE = {}\n" + model(ALLOC + launch() + "        _CACHE[x.shape] = out\n        return out\n"),
    ),
    "module_list_append": (
        "module-state",
        "_SEEN = []\n" + model(ALLOC + launch() + "        _SEEN.append(out)\n        return out\n"),
    ),
    "mutable_default": ("module-state", model(ALLOC + launch() + "        return out\n", args="x, _memo={}")),
    "class_level_container": (
        "module-state",
        "class ModelNew(nn.Module):\n    memo = {}\n\n    def forward(self, x):\n" + ALLOC + launch() + "        return out\n",
    ),
    "function_attribute": (
        "module-state",
        "def helper():\n    pass\n\n\n" + model(ALLOC + launch() + "        helper.last = out\n        return out\n"),
    ),
    "numpy_import": ("forbidden-import", "import numpy as np\n" + model(ALLOC + launch() + "        return out\n")),
    "functools_import": ("forbidden-import", "import functools\n" + model(ALLOC + launch() + "        return out\n")),
    "import_problem": ("forbidden-import", "from problem import Model\n" + model(ALLOC + launch() + "        return out\n")),
    "disallowed_from_import": ("forbidden-import", "from torch import matmul\n" + model("        return matmul(x, x)\n")),
    "tensor_add": ("tensor-arithmetic", model("        return x + x\n")),
    "tensor_matmul_operator": ("tensor-arithmetic", model("        return x @ x\n")),
    "tensor_scale_after_launch": ("tensor-arithmetic", model(ALLOC + launch() + "        return out * 2\n")),
    "tensor_inplace_add": ("tensor-arithmetic", model(ALLOC + launch() + "        out += 1\n        return out\n")),
    "tensor_negate": ("tensor-arithmetic", model(ALLOC + launch() + "        return -out\n")),
    "tensor_compare": ("tensor-arithmetic", model(ALLOC + launch() + "        mask = out > 0\n        return out\n")),
    "builtin_sum_of_tensor": ("tensor-arithmetic", model("        return sum(x)\n")),
    "math_on_tensor": ("tensor-arithmetic", "import math\n" + model("        return math.exp(x)\n")),
    "arithmetic_in_helper": ("tensor-arithmetic", "def combine(a, b):\n    return a * b\n\n\n" + model("        return combine(x, x)\n")),
    "arithmetic_in_nested_def": (
        "tensor-arithmetic",
        model("        def combine(a, b):\n            return a - b\n\n        return combine(x, x)\n"),
    ),
    "arithmetic_in_called_lambda": ("tensor-arithmetic", model("        sub = lambda a, b: a - b\n        return sub(x, x)\n")),
    "arithmetic_on_parameter": (
        "tensor-arithmetic",
        model("        return x * self.w\n", init="        self.w = nn.Parameter(torch.ones(4))\n"),
    ),
    "tensor_sum_method": ("tensor-method", model("        return x.sum(dim=1)\n")),
    "tensor_clone": ("tensor-method", model("        return x.clone()\n")),
    "tensor_fill": ("tensor-method", model(ALLOC + "        out.zero_()\n" + launch() + "        return out\n")),
    "tensor_item": ("tensor-method", model(ALLOC + "        n = x.max().item()\n" + launch() + "        return out\n")),
    "cast_half": ("tensor-method", model(ALLOC + launch() + "        return out.half()\n")),
    "cast_to_dtype": ("tensor-method", model(ALLOC + launch() + "        return out.to(torch.float16)\n")),
    "cast_float": ("tensor-method", model("        xh = x.float()\n        return xh\n")),
    "compute_method_reference": ("tensor-method", model("        f = x.sum\n        return f()\n")),
    "method_in_immediate_lambda": ("tensor-method", model("        return (lambda d: d['x'].mean())({'x': x})\n")),
    "heuristics_lambda_computes": (
        "tensor-method",
        "@triton.heuristics({'B': lambda args: args['out_ptr'].copy_(args['x_ptr'])})\n@triton.jit\n"
        "def k3(x_ptr, out_ptr, B: tl.constexpr):\n    pass\n\n\n" + model(ALLOC + launch() + "        return out\n"),
    ),
    "heuristics_function_computes": (
        "tensor-method",
        "def fill(args):\n    return args['out_ptr'].copy_(args['x_ptr'])\n\n\n@triton.heuristics({'B': fill})\n"
        "@triton.jit\ndef k3(x_ptr, out_ptr, B: tl.constexpr):\n    pass\n\n\n" + model(ALLOC + launch() + "        return out\n"),
    ),
    "tensor_indexed_by_tensor": ("tensor-indexing", model("        return x[idx]\n", args="x, idx")),
    "tensor_indexed_by_list": ("tensor-indexing", model("        return x[[2, 0, 1]]\n")),
    "tensor_indexed_by_range": ("tensor-indexing", model("        return x[:, list(range(3))]\n")),
    "tensor_from_python_data": ("torch-compute", model(ALLOC + launch() + "        return torch.Tensor([1.0, 2.0])\n")),
    "tensor_default_argument": (
        "tensor-method",
        model("        def total(t=x):\n            return t.sum()\n\n        return total()\n"),
    ),
    "tensors_zipped": ("tensor-arithmetic", model("        for a, b in zip(x, x):\n            c = a + b\n        return x\n")),
    "tensor_in_local_object": (
        "tensor-arithmetic",
        "class Box:\n    pass\n\n\n" + model("        b = Box()\n        b.t = x\n        return b.t * 2\n"),
    ),
    "tensor_in_helper_class": (
        "tensor-arithmetic",
        "class Box:\n    def __init__(self, t):\n        self.t = t\n\n\n" + model("        return Box(x).t * 2\n"),
    ),
    "tensor_from_generator": (
        "tensor-arithmetic",
        "def gen(t):\n    yield t\n\n\n" + model("        for v in gen(x):\n            return v + 1\n"),
    ),
    "self_alias": ("alias", model(ALLOC + launch() + "        me = self\n        me.last = out\n        return out\n")),
    "tensor_slice_assignment": ("tensor-write", model(ALLOC + "        out[:] = x\n        return out\n")),
    "tensor_attribute_write": ("tensor-write", model(ALLOC + launch() + "        out.data = x\n        return out\n")),
    "pre_hook": (
        "triton-hook",
        "C = [triton.Config({'BLOCK': 128}, pre_hook=None)]\n" + model(ALLOC + launch() + "        return out\n"),
    ),
    "triton_internals": (
        "triton-internals",
        model(ALLOC + "        f = triton.runtime.jit.JITFunction\n" + launch() + "        return out\n"),
    ),
    "triton_testing": ("triton-internals", model(ALLOC + "        t = triton.testing.do_bench(None)\n" + launch() + "        return out\n")),
    "manual_seed": ("torch-state", "torch.manual_seed(0)\n" + model(ALLOC + launch() + "        return out\n")),
    "torch_private": ("torch-state", model(ALLOC + launch() + "        torch._C._set_grad_enabled(False)\n        return out\n")),
    "unknown_decorator": (
        "decorator",
        "def deco(f):\n    return f\n\n\n@deco\ndef helper():\n    pass\n\n\n" + model(ALLOC + launch() + "        return out\n"),
    ),
    "other_context_manager": ("context-manager", "import contextlib\n" + model("        with contextlib.suppress(Exception):\n            return x\n")),
    "non_jit_call_in_kernel": (
        "kernel-scope",
        "def helper(v):\n    return v\n\n\n@triton.jit\ndef k2(x_ptr):\n    helper(x_ptr)\n\n\n" + model(ALLOC + launch() + "        return out\n"),
    ),
    "breakpoint": ("forbidden-builtin", model(ALLOC + launch() + "        breakpoint()\n        return out\n")),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(FORBIDDEN), ids=sorted(FORBIDDEN))
def test_rejects_forbidden_construct_under_its_rule(case: str) -> None:
    rule, body = FORBIDDEN[case]
    found = rules(body)
    assert rule in found, f"{case}: expected {rule}, got {check(HEAD + body)}"


def test_rejects_file_without_kernel_or_model() -> None:
    assert {v.rule for v in check("import torch\n")} == {"no-triton-kernel", "missing-model"}


def test_reports_syntax_error_as_one_violation() -> None:
    assert [v.rule for v in check("def (:\n")] == ["syntax"]


# --- honest near-misses: each must produce no violation ---------------------------------------------

HONEST: dict[str, str] = {
    "allocate_and_launch": model(ALLOC + launch() + "        return out\n"),
    "every_allocator": model(
        "        a = torch.empty((4, 4), device=x.device, dtype=torch.float32)\n"
        "        b = torch.zeros_like(x)\n        c = torch.ones(3)\n        d = torch.full((2,), 1.5)\n"
        "        e = torch.empty_strided((2, 2), (2, 1))\n        f = x.new_empty((2,))\n"
        + launch("b") + "        return b\n"
    ),
    "views_and_metadata": model(
        "        y = x.reshape(-1, x.shape[-1]).contiguous().view(-1)\n"
        "        t = x.transpose(0, 1).permute(1, 0).t().unsqueeze(0).squeeze(0).flatten()\n"
        "        n = x.numel() // x.size(-1) * x.stride(0) + x.dim() + x.element_size()\n"
        "        ok = x.is_contiguous() and x.dtype == torch.float32 and x.device.type == 'cpu'\n"
        "        out = torch.empty_like(y)\n" + launch("out", "y") + "        return out.view(x.shape)\n"
    ),
    "shape_arithmetic": model(
        "        m, k = x.shape\n        grid = (triton.cdiv(m * k, 256), max(1, m // 2), -(-k // 4))\n"
        "        block = min(triton.next_power_of_2(k), 1024) if k > 0 else 16\n" + ALLOC + launch() + "        return out\n"
    ),
    "raise_on_bad_input": model(
        "        if x.dim() != 2 or x.dtype not in (torch.float16, torch.float32):\n"
        "            raise ValueError(f'bad input {x.shape}')\n        assert x.is_contiguous()\n"
        + ALLOC + launch() + "        return out\n"
    ),
    "basic_slicing_is_a_view": model(
        "        n = x.shape[-1] // 2\n        a = x[:, :n]\n        b = x[None]\n        c = x[..., 0]\n"
        "        d = x[1:-1:2]\n        e = x[(slice(None), 0)]\n" + ALLOC + launch() + "        return out\n"
    ),
    "identity_comparisons": model("        if x is None:\n            return x\n" + ALLOC + launch() + "        return out\n"),
    "no_grad_context": model("        with torch.no_grad():\n            out = torch.empty_like(x)\n    " + launch() + "        return out\n"),
    "parameters_in_init": model(
        ALLOC + "        w = self.lin.weight\n" + launch("out", "w") + "        return out\n",
        init="        self.lin = nn.Linear(4, 4)\n        self.eps = 1e-6\n"
        "        self.w = nn.Parameter(torch.empty(4))\n        nn.init.normal_(self.w)\n"
        "        self.register_buffer('scale', torch.ones(1))\n",
    ),
    "layer_configuration_arithmetic": model(
        "        n = self.lin.in_features * 2 + self.lin.out_features\n        if self.training:\n            n += 1\n"
        + ALLOC + launch() + "        return out\n",
        init="        self.lin = nn.Linear(4, 4)\n",
    ),
    "scalar_attribute_arithmetic": model(
        "        eps = self.eps * 2\n" + ALLOC + launch() + "        return out\n", init="        self.eps = 1e-6\n"
    ),
    "device_properties": model(
        "        sms = torch.cuda.get_device_properties(x.device).multi_processor_count if x.is_cuda else 4\n"
        + ALLOC + "        kernel[(min(sms, 8),)](x, out, x.numel(), BLOCK=128)\n        return out\n"
    ),
    "module_constants_and_configs": "BLOCK = 128\nCONFIGS = [triton.Config({'BLOCK': b}) for b in (64, 128)]\n"
    + model(ALLOC + launch() + "        return out\n"),
    "local_list_of_outputs": model(
        "        outs = []\n        for chunk in x.split(2):\n            o = torch.empty_like(chunk)\n"
        "            kernel[(1,)](chunk, o, chunk.numel(), BLOCK=128)\n            outs.append(o)\n        return outs[0]\n"
    ),
    "typing_and_future": "from __future__ import annotations\n\nfrom typing import Optional\n\nimport math\n"
    + model("        n: int = math.prod(x.shape)\n        o: Optional[torch.Tensor] = torch.empty_like(x)\n"
            "        kernel[(triton.cdiv(n, 128),)](x, o, n, BLOCK=128)\n        return o\n"),
    "libdevice_in_kernel": "from triton.language.extra import libdevice\n\n\n@triton.jit\ndef k2(x_ptr, n):\n"
    "    v = tl.load(x_ptr)\n    tl.store(x_ptr, libdevice.erf(v) + tl.math.exp(v) + math.pi)\n\n\nimport math\n"
    + model(ALLOC + launch() + "        return out\n"),
    "int_inputs_annotated": model(ALLOC + "        k = n * 2\n" + launch() + "        return out\n", args="x, n: int"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(HONEST), ids=sorted(HONEST))
def test_accepts_honest_construct(case: str) -> None:
    violations = check(HEAD + HONEST[case])
    assert violations == [], f"{case}: {format_violations(violations)}"


AUTOTUNED_2D = """
import torch
import torch.nn as nn
import triton
import triton.language as tl


def _configs():
    return [triton.Config({"BLOCK_M": m, "BLOCK_N": n}, num_warps=w) for m in (32, 64) for n in (32, 64) for w in (2, 4)]


@triton.jit
def _scale(v, s):
    return v * s


@triton.jit
def _tile(x_ptr, out_ptr, m, n, stride, s, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rm[:, None] < m) & (rn[None, :] < n)
    v = tl.load(x_ptr + rm[:, None] * stride + rn[None, :], mask=mask, other=0.0)
    tl.store(out_ptr + rm[:, None] * stride + rn[None, :], _scale(v, s), mask=mask)


@triton.autotune(configs=_configs(), key=["m", "n"])
@triton.heuristics({"EVEN_N": lambda args: args["n"] % args["BLOCK_N"] == 0})
@triton.jit
def _scale_2d(x_ptr, out_ptr, m, n, stride, s, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, EVEN_N: tl.constexpr):
    _tile(x_ptr, out_ptr, m, n, stride, s, BLOCK_M, BLOCK_N)


def _launch(x: torch.Tensor, scale: float) -> torch.Tensor:
    x2 = x.reshape(-1, x.shape[-1]).contiguous()
    out = torch.empty_like(x2)
    m, n = x2.shape
    grid = lambda meta: (triton.cdiv(m, meta["BLOCK_M"]), triton.cdiv(n, meta["BLOCK_N"]))  # noqa: E731
    _scale_2d[grid](x2, out, m, n, x2.stride(0), scale)
    return out.view(x.shape)


class ModelNew(nn.Module):
    def __init__(self, scale: float = 2.0):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return _launch(x, self.scale)
"""


def test_accepts_autotuned_heuristic_2d_grid_kernel_with_jit_helpers() -> None:
    assert check(AUTOTUNED_2D) == []


HONEST_FILES = sorted(
    [
        *ROOT.glob("examples/*/candidate.py"),
        ROOT / "tests" / "adversarial" / "honest.py",
        *ROOT.glob("tests/adversarial/honest_variants/*.py"),  # tutorial/LLM-style honest launchers
    ],
)


@pytest.mark.parametrize("path", HONEST_FILES, ids=[p.parent.name + "/" + p.name for p in HONEST_FILES])
def test_accepts_bundled_honest_candidates(path: Path) -> None:
    violations = check(path.read_text(), str(path))
    assert violations == [], format_violations(violations)


def test_every_example_has_a_candidate() -> None:
    assert len(list(ROOT.glob("examples/*/candidate.py"))) >= 6


# --- messages ------------------------------------------------------------------------------------


def test_message_names_the_call_its_line_and_what_is_allowed() -> None:
    source = HEAD + model("        return torch.matmul(x, x)\n")
    line = source.splitlines().index("        return torch.matmul(x, x)") + 1
    (violation,) = check(source)
    assert (violation.rule, violation.line) == ("torch-compute", line)
    assert str(violation).startswith(f"line {line}: torch.matmul computes with torch")
    assert "allocate" in violation.message


def test_alias_message_names_the_real_function() -> None:
    found = check(HEAD + "import torch as T\n" + model("        return T.relu(x)\n"))
    assert any("T.relu (torch.relu) computes with torch" in v.message for v in found)


def test_format_violations_caps_the_list() -> None:
    violations = [Violation("torch-compute", i, f"m{i}") for i in range(1, 11)]
    text = format_violations(violations, limit=3)
    assert text == "line 1: m1; line 2: m2; line 3: m3; and 7 more"


def test_violations_are_sorted_and_unique() -> None:
    body = model("        a = torch.matmul(x, x)\n        b = torch.matmul(x, x)\n        return a\n")
    found = check(HEAD + body)
    assert [v.line for v in found] == sorted(v.line for v in found)
    assert len(found) == len(set(found)) == 2


def test_absurdly_nested_source_is_refused_without_crashing() -> None:
    deep = "x = " + "+".join(["1"] * 2000) + "\n"
    assert [v.rule for v in check(deep)] == ["too-complex"]
    assert [v.rule for v in check("x = 1\x00")] == ["syntax"]


def test_every_rule_the_checker_can_report_has_a_forbidden_example() -> None:
    import ast as pyast

    reported: set[str] = set()
    sources = sorted((ROOT / "search").glob("static_*.py"))
    for path in sources:
        for node in pyast.walk(pyast.parse(path.read_text())):
            if isinstance(node, pyast.Constant) and isinstance(node.value, str):
                value = node.value
                if value.replace("-", "").isalpha() and value.islower() and "-" in value and " " not in value:
                    reported.add(value)
    covered = {rule for rule, _ in FORBIDDEN.values()} | {"no-triton-kernel", "missing-model", "too-complex"}
    assert {"torch-compute", "module-patch", "cuda-stream"} <= reported  # the scan does find rule names
    assert reported - covered == set(), f"rules without a forbidden example: {sorted(reported - covered)}"


def test_oversized_or_violation_flooded_file_is_cut_short() -> None:
    assert [v.rule for v in check("x = 1\n" * 30_000)] == ["too-complex"]
    flood = HEAD + model(
        "".join(f"        y{i} = torch.relu(x)\n" for i in range(200)) + "        return x\n"
    )
    assert len(check(flood)) == 50


def test_checker_imports_neither_torch_nor_triton() -> None:
    import subprocess
    import sys

    code = (
        "import sys, kernelevolve.search.static_check as s; s.check('import torch'); "
        "print(sorted(m for m in ('torch', 'triton') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"  # it runs in the caller's process, before any candidate code
