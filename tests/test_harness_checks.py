"""The worker's runtime checks, end to end through real worker subprocesses on the CPU interpreter.

Most candidates here would already fail the static anti-cheat; they run with
``static_checks=False`` so that the runtime line of defence is proven on its own.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from kernelevolve.search.config import EvalConfig
from kernelevolve.search.harness import evaluate
from kernelevolve.search.results import EvalResult, Stage, TimingKind, Verdict

HERE = Path(__file__).parent
PROBLEM = HERE / "harness_fixtures" / "add_problem.py"
HONEST = (HERE / "harness_fixtures" / "add_candidate.py").read_text()

pytestmark = pytest.mark.slow

KERNELS = """
import threading
import time

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


@triton.jit
def noop_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.load(x_ptr + offs, mask=offs < n)


def launch_add(x, y, out):
    add_kernel[(triton.cdiv(x.numel(), 64),)](x, y, out, x.numel(), BLOCK=64)
    return out
"""


def _eval(forward: str, *, init: str = "", static_checks: bool = False) -> EvalResult:
    source = KERNELS + "\n\nclass ModelNew(nn.Module):\n" + (init or "    pass\n") + forward
    return evaluate(PROBLEM, source, EvalConfig(device="cpu", skip_timing=True, static_checks=static_checks))


def _rejected(result: EvalResult, stage: Stage, needle: str) -> None:
    assert result.verdict is Verdict.REJECTED, result
    assert result.stage is stage, (result.stage, result.reason)
    assert needle in (result.reason or ""), result.reason


def test_honest_triton_vector_add_is_accepted_on_every_input_set() -> None:
    result = evaluate(PROBLEM, HONEST, EvalConfig(device="cpu", skip_timing=True))
    assert result.verdict is Verdict.CORRECT, (result.stage, result.reason, result.log_tail)
    assert result.stage is Stage.DONE
    names = [s.name for s in result.input_sets]
    assert names == ["seed:0", "seed:1", "seed:2", "test:0", "test:1", "revalidate:1002"]
    assert all(s.passed for s in result.input_sets)
    assert result.input_sets[3].shapes == [[5], [5]]
    assert result.source_hash and result.duration_s > 0


def test_candidate_computing_with_torch_and_launching_nothing_is_rejected() -> None:
    result = _eval("    def forward(self, x, y):\n        return x + y\n")
    _rejected(result, Stage.GHOST, "no Triton kernel was launched on input set seed:0")


def test_candidate_whose_kernel_does_not_produce_the_output_fails_ghost_replay() -> None:
    forward = (
        "    def forward(self, x, y):\n"
        "        noop_kernel[(1,)](x, x.numel(), BLOCK=64)\n"
        "        return x + y\n"
    )
    _rejected(
        _eval(forward), Stage.GHOST, "still matches the reference with every Triton launch made a no-op"
    )


def test_autotune_pre_hook_computing_the_answer_fails_ghost_replay() -> None:
    source = KERNELS + (
        "\n\ndef _answer(nargs):\n"
        "    nargs['out_ptr'].copy_(nargs['x_ptr'] + nargs['y_ptr'])\n\n\n"
        "@triton.autotune(configs=[triton.Config({'BLOCK': 64}, pre_hook=_answer)], key=['n'])\n"
        "@triton.jit\n"
        "def hooked(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):\n"
        "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
        "    tl.load(x_ptr + offs, mask=offs < n)\n\n\n"
        "class ModelNew(nn.Module):\n"
        "    def forward(self, x, y):\n"
        "        out = torch.empty_like(x)\n"
        "        hooked[(1,)](x, y, out, x.numel())\n"
        "        return out\n"
    )
    result = evaluate(PROBLEM, source, EvalConfig(device="cpu", skip_timing=True, static_checks=False))
    _rejected(result, Stage.GHOST, "with every Triton launch made a no-op")


def test_returning_the_input_is_wrong_output() -> None:
    forward = (
        "    def forward(self, x, y):\n        noop_kernel[(1,)](x, x.numel(), BLOCK=64)\n        return x\n"
    )
    _rejected(_eval(forward), Stage.CORRECTNESS, "seed:0 (first run, before the reference)")


def test_writing_the_result_into_an_input_is_rejected_as_mutation() -> None:
    forward = "    def forward(self, x, y):\n        return launch_add(x, y, x)\n"
    _rejected(_eval(forward), Stage.CORRECTNESS, "input[0] was modified in place by the candidate")


def test_returning_the_same_buffer_on_every_call_is_rejected() -> None:
    init = "    def __init__(self):\n        super().__init__()\n        self.out = None\n"
    forward = (
        "    def forward(self, x, y):\n"
        "        if self.out is None or self.out.shape != x.shape:\n"
        "            self.out = torch.empty_like(x)\n"
        "        return launch_add(x, y, self.out)\n"
    )
    _rejected(_eval(forward, init=init), Stage.CORRECTNESS, "two calls returned the same output buffer")


def test_replaying_a_cached_result_for_new_inputs_is_rejected() -> None:
    init = "    def __init__(self):\n        super().__init__()\n        self.cache = {}\n"
    forward = (
        "    def forward(self, x, y):\n"
        "        key = tuple(x.shape)\n"
        "        if key not in self.cache:\n"
        "            self.cache[key] = launch_add(x, y, torch.empty_like(x))\n"
        "        noop_kernel[(1,)](x, x.numel(), BLOCK=64)\n"
        "        return self.cache[key].clone()\n"
    )
    _rejected(_eval(forward, init=init), Stage.CORRECTNESS, "seed:1")


def test_uninitialised_output_reads_as_poison_not_as_a_stale_answer() -> None:
    forward = (
        "    def forward(self, x, y):\n"
        "        noop_kernel[(1,)](x, x.numel(), BLOCK=64)\n"
        "        return torch.empty_like(x)\n"
    )
    _rejected(_eval(forward), Stage.CORRECTNESS, "seed:0")


def test_background_thread_left_running_is_rejected() -> None:
    forward = (
        "    def forward(self, x, y):\n"
        "        out = torch.empty_like(x)\n"
        "        threading.Thread(target=time.sleep, args=(5,), daemon=True).start()\n"
        "        return launch_add(x, y, out)\n"
    )
    _rejected(_eval(forward), Stage.CORRECTNESS, "left 1 new Python thread(s) running")


def test_thread_started_in_the_constructor_is_rejected() -> None:
    init = (
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        threading.Thread(target=time.sleep, args=(5,), daemon=True).start()\n"
    )
    forward = "    def forward(self, x, y):\n        return launch_add(x, y, torch.empty_like(x))\n"
    _rejected(
        _eval(forward, init=init),
        Stage.COMPILE,
        "importing or constructing the candidate left 1 new Python thread",
    )


def test_patching_the_timer_is_rejected_as_tampering() -> None:
    forward = (
        "    def forward(self, x, y):\n"
        "        time.perf_counter = lambda: 0.0\n"
        "        return launch_add(x, y, torch.empty_like(x))\n"
    )
    _rejected(_eval(forward), Stage.COMPILE, "the candidate replaced time.perf_counter")


def test_lazy_tensor_subclass_output_is_rejected() -> None:
    init = "    class Lazy(torch.Tensor):\n        pass\n"
    forward = (
        "    def forward(self, x, y):\n"
        "        return launch_add(x, y, torch.empty_like(x)).as_subclass(ModelNew.Lazy)\n"
    )
    _rejected(_eval(forward, init=init), Stage.CORRECTNESS, "expected a plain torch.Tensor")


def test_static_checks_reject_torch_compute_before_any_code_runs() -> None:
    result = _eval("    def forward(self, x, y):\n        return torch.add(x, y)\n", static_checks=True)
    assert result.verdict is Verdict.REJECTED
    assert result.stage is Stage.STATIC
    assert result.reason and "line" in result.reason
    assert result.log_tail == ""  # no worker was started


def test_exception_in_constructor_is_a_compile_rejection() -> None:
    init = "    def __init__(self):\n        super().__init__()\n        raise ValueError('bad init')\n"
    _rejected(
        _eval("    def forward(self, x, y):\n        return x\n", init=init),
        Stage.COMPILE,
        "ValueError: bad init",
    )


def test_honest_candidate_on_cpu_gets_modelled_timing_and_a_fingerprint() -> None:
    result = evaluate(PROBLEM, HONEST, EvalConfig(device="cpu"))
    assert result.verdict is Verdict.CORRECT, (result.stage, result.reason, result.log_tail)
    assert result.timing_kind is TimingKind.MODELLED
    assert [t.input_set for t in result.timings] == ["seed:0", "test:0", "test:1"]  # one per distinct shape
    assert all(t.kind is TimingKind.MODELLED for t in result.timings)
    assert result.speedup is not None and result.speedup > 0
    assert result.fingerprint is not None and result.fingerprint.hardware_model == "nvidia-h200"
    assert result.summary()["timing"] == "modelled"
