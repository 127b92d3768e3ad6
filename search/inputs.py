"""Worker-side input handling: seeding, named input sets, device moves, clones, mutation checks."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import torch


@dataclass
class InputSet:
    name: str  # "seed:0", "test:2", "benchmark:0", "revalidate:1000"
    args: list[Any]  # on the evaluation device; never handed to a model directly (see fresh_copy)

    @property
    def shapes(self) -> list[list[int]]:
        return [list(a.shape) for a in flatten_tensors(self.args)]

    @property
    def dtypes(self) -> list[str]:
        return [dtype_name(a.dtype) for a in flatten_tensors(self.args)]


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def seed_everything(seed: int) -> None:
    random.seed(seed)
    torch.manual_seed(seed)  # also seeds every CUDA device
    try:
        import numpy as np

        np.random.seed(seed % (2**32))
    except ImportError:  # pragma: no cover - numpy ships with the project
        pass


def map_tensors(obj: Any, fn: Callable[[torch.Tensor], Any]) -> Any:
    """Apply ``fn`` to every tensor inside lists, tuples and dicts; other values are kept."""
    if isinstance(obj, torch.Tensor):
        return fn(obj)
    if isinstance(obj, list):
        return [map_tensors(v, fn) for v in obj]
    if isinstance(obj, tuple):
        return tuple(map_tensors(v, fn) for v in obj)
    if isinstance(obj, dict):
        return {k: map_tensors(v, fn) for k, v in obj.items()}
    return obj


def flatten_tensors(obj: Any) -> list[torch.Tensor]:
    found: list[torch.Tensor] = []
    map_tensors(obj, found.append)
    return found


def to_device(obj: Any, device: str) -> Any:
    """Move tensors to ``device``; dtypes are kept (integer indices stay integer)."""
    return map_tensors(obj, lambda t: t.detach().to(device))


def fresh_copy(obj: Any) -> Any:
    """Deep copy into new storage, so no call can see (or key a cache on) another call's buffers."""
    return map_tensors(obj, lambda t: t.detach().clone())


def build_input_sets(problem: ModuleType, seeds: tuple[int, ...], device: str) -> list[InputSet]:
    """Random sets from ``get_inputs()`` under each seed, then every ``get_test_inputs()`` set, then
    (on CUDA) every ``get_benchmark_inputs()`` set."""
    sets: list[InputSet] = []
    for seed in seeds:
        seed_everything(seed)
        sets.append(InputSet(f"seed:{seed}", to_device(list(problem.get_inputs()), device)))
    if hasattr(problem, "get_test_inputs"):
        seed_everything(seeds[0] if seeds else 0)
        for i, args in enumerate(problem.get_test_inputs()):
            sets.append(InputSet(f"test:{i}", to_device(list(args), device)))
    if device.startswith("cuda") and hasattr(problem, "get_benchmark_inputs"):
        seed_everything(seeds[0] if seeds else 0)
        for i, args in enumerate(problem.get_benchmark_inputs()):
            sets.append(InputSet(f"benchmark:{i}", to_device(list(args), device)))
    check_int_inputs(sets, getattr(problem, "INT_INPUTS", ()))
    return sets


def check_int_inputs(sets: list[InputSet], indices: Any) -> None:
    """The problem's ``INT_INPUTS`` promise: those arguments are integer tensors in every set."""
    for s in sets:
        for i in indices:
            arg = s.args[i] if isinstance(i, int) and -len(s.args) <= i < len(s.args) else None
            if not isinstance(arg, torch.Tensor) or arg.is_floating_point() or arg.is_complex():
                got = f"{type(arg).__name__} {getattr(arg, 'dtype', '')}".strip()
                raise ValueError(
                    f"INT_INPUTS names argument {i}, but in {s.name} it is {got}, not an integer tensor"
                )


def same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Bit-for-bit equality (NaN payloads included); shapes, dtypes and strides' values must match."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.numel() == 0:
        return True
    ac, bc = a.detach().contiguous(), b.detach().contiguous()
    if ac.dtype == torch.bool:
        return bool(torch.equal(ac, bc))
    return bool(torch.equal(ac.view(torch.uint8), bc.view(torch.uint8)))


def mutation(pristine: Any, after: Any, path: str = "input") -> str | None:
    """Where ``after`` differs from ``pristine`` (a tensor changed in place, a list edited), if anywhere."""
    if isinstance(pristine, torch.Tensor):
        if not isinstance(after, torch.Tensor):
            return f"{path} was replaced by {type(after).__name__}"
        if not same_bits(pristine, after):
            return f"{path} was modified in place"
        return None
    if isinstance(pristine, list | tuple):
        if not isinstance(after, list | tuple) or len(after) != len(pristine):
            return f"{path} changed length or type"
        for i, (p, a) in enumerate(zip(pristine, after, strict=True)):
            found = mutation(p, a, f"{path}[{i}]")
            if found:
                return found
        return None
    if isinstance(pristine, dict):
        if not isinstance(after, dict) or pristine.keys() != after.keys():
            return f"{path} changed keys"
        for k in pristine:
            found = mutation(pristine[k], after[k], f"{path}[{k!r}]")
            if found:
                return found
        return None
    try:
        equal = bool(pristine == after)
    except Exception:  # noqa: BLE001 - an exotic value without a usable ==; identity is the best we have
        equal = pristine is after
    return None if equal else f"{path} changed from {pristine!r} to {after!r}"
