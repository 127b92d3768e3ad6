"""The Triton code the knowledge base teaches must be right: run the guidance documents' kernels
in Triton's interpreter (a subprocess, TRITON_INTERPRET=1) against PyTorch."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap

from kernelevolve.knowledge.kb import BUILTIN_ROOT

FENCE = re.compile(r"```python\n(.*?)```", re.S)


def block(doc: str, needle: str) -> str:
    text = (BUILTIN_ROOT / "guidance" / f"{doc}.md").read_text()
    [code] = [b for b in FENCE.findall(text) if needle in b]
    return code


PRELUDE = (
    "import os\nos.environ['TRITON_INTERPRET'] = '1'\n"
    "import torch\nimport torch.nn as nn\nimport triton\nimport triton.language as tl\n"
)


def block_text(doc: str) -> str:
    return (BUILTIN_ROOT / "guidance" / f"{doc}.md").read_text()


def run_interpreted(code: str) -> str:
    proc = subprocess.run([sys.executable, "-c", PRELUDE + code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def test_the_vector_add_of_triton_idioms_is_correct_on_odd_sizes() -> None:
    code = block("triton-idioms", "def add_kernel")
    check = textwrap.dedent(
        """
        for n in (1, 1000, 4099):
            x, y = torch.randn(n), torch.randn(n)
            torch.testing.assert_close(ModelNew()(x, y), x + y)
        print("ok")
        """
    )
    assert run_interpreted(code + check).strip() == "ok"


def test_the_gemm_kernel_matches_torch_in_fp32_with_ieee_precision_on_ragged_shapes() -> None:
    code = block("gemm", "def matmul_kernel").replace(
        "acc = tl.dot(a, b, acc)", 'acc = tl.dot(a, b, acc, input_precision="ieee")'
    )
    check = textwrap.dedent(
        """
        for M, N, K in ((64, 64, 64), (33, 47, 70)):
            a, b = torch.randn(M, K), torch.randn(K, N)
            c = torch.empty(M, N)
            grid = (triton.cdiv(M, 32) * triton.cdiv(N, 32),)
            matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                                c.stride(0), c.stride(1), BLOCK_M=32, BLOCK_N=32, BLOCK_K=16, GROUP_SIZE_M=4)
            torch.testing.assert_close(c, a @ b, atol=1e-4, rtol=1e-4)
        print("ok")
        """
    )
    assert run_interpreted(code + check).strip() == "ok"


def autotune_example(configs: int) -> str:
    code = block("autotuning", "@triton.autotune").replace(
        "def kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr): ...",
        textwrap.dedent(
            """
            def kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
                offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
                x = tl.load(x_ptr + offs, mask=offs < n_elements)
                tl.store(out_ptr + offs, x * 3.0, mask=offs < n_elements)
            """
        ),
    )
    if configs == 1:  # keep only the first triton.Config line
        lines = code.splitlines()
        first = next(i for i, line in enumerate(lines) if "triton.Config(" in line)
        code = "\n".join(line for i, line in enumerate(lines) if "triton.Config(" not in line or i == first)
    launch_at = code.index("# launch with")
    setup = "n = 3000\nx = torch.randn(n)\nout = torch.empty(n)\n"
    return (
        code[:launch_at]
        + setup
        + code[launch_at:]
        + "\ntorch.testing.assert_close(out, x * 3.0)\nprint('ok')\n"
    )


def test_the_autotune_example_runs_with_one_config_in_the_interpreter() -> None:
    assert run_interpreted(autotune_example(configs=1)).strip() == "ok"


def test_autotune_with_several_configs_fails_in_the_interpreter_as_the_guidance_says() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", PRELUDE + autotune_example(configs=3)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode != 0
    assert "0 active drivers ([]). There should only be one." in proc.stderr
    assert "0 active drivers ([]). There should only be one." in block_text("compiler-errors")
