"""Worker-side Triton launch interception, ghost replay and allocator poisoning.

``LaunchInterceptor.install()`` wraps the leaf launch paths of Triton (``JITFunction.run``, the
interpreter's ``InterpretedFunction.run``) once, before the candidate is imported, so the
candidate can neither avoid nor pre-bind them. ``Autotuner.run`` and ``Heuristics.run`` end in
those leaves, so they are covered too. In normal mode every real launch is counted; in ghost mode
every launch is a no-op while everything around it still runs: an autotune ``pre_hook`` or
``post_hook`` that computes the answer in Python therefore still "passes" the ghost run and is
caught.

``poisoned_allocations()`` makes torch's allocation functions return memory filled with NaN (or a
sentinel for integer types) for the duration of a ghost run: with the kernels silenced, an output
that still matches the reference was not produced by the kernels.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import torch

POISON_BYTE = 0xA5  # integer tensors: every byte 0xA5, an unlikely value for any real result
ALLOCATORS = (
    "empty",
    "empty_like",
    "empty_strided",
    "zeros",
    "zeros_like",
    "ones",
    "ones_like",
    "full",
    "full_like",
)
TENSOR_ALLOCATORS = ("new_empty", "new_empty_strided", "new_zeros", "new_ones", "new_full")


class LaunchInterceptor:
    """Counts Triton launches and the ones that raised; in ghost mode, swallows them."""

    def __init__(self) -> None:
        self.launches = 0
        self.failed_launches: list[str] = []  # errors of launches that raised, swallowed or not
        self.benchmarking = 0  # inside the autotuner's own trial runs, whose failures it handles
        self.ghost = False
        self.installed: list[str] = []

    def install(self) -> None:
        from triton.runtime import jit

        self._wrap_leaf(jit.JITFunction, "triton.runtime.jit.JITFunction.run")
        try:
            from triton.runtime import interpreter

            self._wrap_leaf(
                interpreter.InterpretedFunction, "triton.runtime.interpreter.InterpretedFunction.run"
            )
        except ImportError:  # pragma: no cover - every supported Triton has the interpreter
            pass
        self._mark_autotune_trials()

    def _mark_autotune_trials(self) -> None:
        """The autotuner tries configs and drops those that fail (OutOfResources): not a fallback."""
        from triton.runtime import autotuner

        bench = getattr(autotuner.Autotuner, "_bench", None)
        if bench is None:  # pragma: no cover - present in every supported Triton
            return
        interceptor = self

        def _bench(self: Any, *args: Any, **kwargs: Any) -> Any:
            interceptor.benchmarking += 1
            try:
                return bench(self, *args, **kwargs)
            finally:
                interceptor.benchmarking -= 1

        autotuner.Autotuner._bench = _bench  # type: ignore[method-assign]

    def _wrap_leaf(self, cls: type, label: str) -> None:
        original = cls.run  # type: ignore[attr-defined]
        interceptor = self

        def run(self: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
            if warmup:
                return original(self, *args, grid=grid, warmup=warmup, **kwargs)
            if interceptor.ghost:
                return None
            interceptor.launches += 1
            try:
                return original(self, *args, grid=grid, warmup=warmup, **kwargs)
            except BaseException as exc:
                if interceptor.benchmarking:
                    raise
                name = getattr(self, "__name__", None) or getattr(
                    getattr(self, "fn", None), "__name__", "kernel"
                )
                interceptor.failed_launches.append(f"{name}: {type(exc).__name__}: {exc}"[:300])
                raise

        cls.run = run  # type: ignore[attr-defined]
        self.installed.append(label)

    @contextlib.contextmanager
    def ghost_mode(self) -> Iterator[None]:
        self.ghost = True
        try:
            yield
        finally:
            self.ghost = False


def fill_poison(t: torch.Tensor) -> torch.Tensor:
    """Overwrite ``t`` with NaN (floating/complex), True (bool) or 0xA5 bytes (integers)."""
    if t.numel() == 0:
        return t
    with torch.no_grad():
        if t.is_floating_point() or t.is_complex():
            t.fill_(float("nan"))
        elif t.dtype == torch.bool:
            t.fill_(True)
        else:
            t.view(torch.uint8).fill_(POISON_BYTE) if t.is_contiguous() else t.fill_(-1)
    return t


def _poisoning(fn: Callable[..., Any]) -> Callable[..., Any]:
    def allocate(*args: Any, **kwargs: Any) -> Any:
        out = fn(*args, **kwargs)
        return fill_poison(out) if isinstance(out, torch.Tensor) else out

    return allocate


@contextlib.contextmanager
def poisoned_allocations() -> Iterator[None]:
    """For the duration, torch's allocation functions return poisoned memory."""
    saved: list[tuple[Any, str, Any]] = []
    try:
        for name in ALLOCATORS:
            saved.append((torch, name, getattr(torch, name)))
            setattr(torch, name, _poisoning(getattr(torch, name)))
        for name in TENSOR_ALLOCATORS:
            saved.append((torch.Tensor, name, getattr(torch.Tensor, name)))
            setattr(torch.Tensor, name, _poisoning(getattr(torch.Tensor, name)))
        yield
    finally:
        for owner, name, original in reversed(saved):
            setattr(owner, name, original)


def poison_allocator(device: str, sizes_bytes: list[int]) -> None:
    """Leave NaN-filled freed blocks of each size (and one large one) in the allocator's free lists.

    An output the candidate 'allocates' without writing, or a buffer it gets back that still holds
    an earlier result, then reads as NaN instead of a plausible answer.
    """
    dev = torch.device(device)
    blocks = []
    for nbytes in [*sizes_bytes, 64 << 20 if dev.type == "cuda" else 0]:
        if nbytes <= 0:
            continue
        n = (nbytes + 3) // 4
        blocks.append(torch.full((n,), float("nan"), dtype=torch.float32, device=dev))
    del blocks  # the blocks go back to the caching allocator (CUDA) or malloc's free lists (CPU)
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)
