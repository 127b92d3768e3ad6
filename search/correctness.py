"""The comparison rules a candidate's output must meet against the reference's.

Pure functions over tensors, used inside the worker (and unit-tested in-process):

- outputs must be exactly ``torch.Tensor`` (no subclass, no lazy wrapper), strided, with real
  storage, and the reference's shape, dtype and device; tuples/lists are compared element-wise;
- floating outputs: ``|out - ref| <= atol + rtol * |ref|`` with per-dtype defaults (fp32 1e-4,
  fp16/bf16 1e-2) that the problem's ``ATOL``/``RTOL`` override (a float, or a dict by dtype name);
- integer and bool outputs: exact;
- NaN/Inf: only where the reference has the same NaN/Inf.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
from kernelevolve.search.inputs import dtype_name

DEFAULT_TOLERANCE: dict[str, float] = {
    "float64": 1e-7,
    "float32": 1e-4,
    "float16": 1e-2,
    "bfloat16": 1e-2,
    "complex64": 1e-4,
    "complex128": 1e-7,
}
FP8_TOLERANCE = 1e-1  # float8_* outputs: 3 mantissa bits at best
ToleranceSpec = float | dict[str, float] | None


@dataclass
class Comparison:
    passed: bool
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    reason: str | None = None


def tolerance(dtype: torch.dtype, spec: ToleranceSpec) -> float:
    """The tolerance for ``dtype``: the problem's override if it names one, else the default."""
    name = dtype_name(dtype)
    if isinstance(spec, int | float) and not isinstance(spec, bool):
        return float(spec)
    if isinstance(spec, dict) and name in spec:
        return float(spec[name])
    if name.startswith("float8"):
        return FP8_TOLERANCE
    return DEFAULT_TOLERANCE.get(name, 1e-4)


def plain_tensor_problem(out: Any, ref: torch.Tensor, where: str) -> str | None:
    """Why ``out`` is not an acceptable stand-in for the tensor ``ref`` (type, layout, storage, ...)."""
    if type(out) is not torch.Tensor:
        kind = "a tensor subclass" if isinstance(out, torch.Tensor) else "not a tensor"
        return f"{where}: expected a plain torch.Tensor, got {type(out).__qualname__} ({kind})"
    if out.layout is not torch.strided:
        return f"{where}: expected a strided (dense) tensor, got layout {out.layout}"
    if out.device.type == "meta" or out.is_meta:
        return f"{where}: meta tensor without data"
    if out.device != ref.device:
        return f"{where}: device {out.device}, expected {ref.device}"
    if out.dtype != ref.dtype:
        return f"{where}: dtype {dtype_name(out.dtype)}, expected {dtype_name(ref.dtype)}"
    if out.shape != ref.shape:
        return f"{where}: shape {list(out.shape)}, expected {list(ref.shape)}"
    if out.numel() > 0:
        if out.data_ptr() == 0:
            return f"{where}: tensor has no storage (null data pointer)"
        needed = (sum((s - 1) * abs(st) for s, st in zip(out.shape, out.stride(), strict=True)) + 1) * (
            out.element_size()
        )
        have = out.untyped_storage().nbytes() - out.storage_offset() * out.element_size()
        if have < needed:
            return f"{where}: storage holds {have} bytes, the view needs {needed}"
    return None


def compare_tensor(
    out: torch.Tensor, ref: torch.Tensor, atol: ToleranceSpec, rtol: ToleranceSpec
) -> Comparison:
    """Values of two tensors already known to have the same shape, dtype and device."""
    if ref.numel() == 0:
        return Comparison(True, 0.0, 0.0)
    if not (ref.is_floating_point() or ref.is_complex()):
        if torch.equal(out, ref):
            return Comparison(True, 0.0, 0.0)
        wrong = int((out != ref).sum())
        return Comparison(False, reason=f"{wrong} of {ref.numel()} elements differ (exact match required)")
    a_tol, r_tol = tolerance(ref.dtype, atol), tolerance(ref.dtype, rtol)
    o, r = out.detach().to(torch.complex128 if ref.is_complex() else torch.float64), ref.detach()
    r = r.to(o.dtype)
    ref_nan, out_nan = torch.isnan(r), torch.isnan(o)
    if not torch.equal(ref_nan, out_nan):
        n = int((out_nan & ~ref_nan).sum())
        if n:
            return Comparison(False, reason=f"{n} NaN value(s) where the reference has none")
        return Comparison(
            False, reason=f"{int((ref_nan & ~out_nan).sum())} value(s) not NaN where the reference is NaN"
        )
    ref_inf, out_inf = torch.isinf(r), torch.isinf(o)
    if not torch.equal(ref_inf, out_inf) or not torch.equal(o[ref_inf], r[ref_inf]):
        n = int((out_inf & ~ref_inf).sum())
        return Comparison(
            False, reason=f"Inf mismatch: {n} Inf value(s) where the reference is finite, or Infs differ"
        )
    finite = ~(ref_nan | ref_inf)
    diff = (o - r).abs()[finite]
    mag = r.abs()[finite]
    if diff.numel() == 0:
        return Comparison(True, 0.0, 0.0)
    max_abs = float(diff.max())
    max_rel = float((diff / mag.clamp_min(torch.finfo(torch.float64).tiny)).max())
    bad = diff > a_tol + r_tol * mag
    if bool(bad.any()):
        n = int(bad.sum())
        return Comparison(
            False,
            max_abs,
            max_rel,
            f"{n} of {ref.numel()} elements outside atol={a_tol:g} rtol={r_tol:g} "
            f"({dtype_name(ref.dtype)}; max abs err {max_abs:.3g}, max rel err {_fmt(max_rel)})",
        )
    return Comparison(True, max_abs, max_rel)


def compare_outputs(out: Any, ref: Any, atol: ToleranceSpec = None, rtol: ToleranceSpec = None) -> Comparison:
    """Check a whole output (tensor, tuple/list of them, or a plain value) against the reference's."""
    worst = Comparison(True, 0.0, 0.0)
    for where, o, r in _pairs(out, ref, "output"):
        if isinstance(r, torch.Tensor):
            problem = plain_tensor_problem(o, r, where)
            if problem:
                return Comparison(False, reason=problem)
            cmp = compare_tensor(o, r, atol, rtol)
            if not cmp.passed:
                cmp.reason = f"{where}: {cmp.reason}"
                return cmp
            worst.max_abs_err = max(worst.max_abs_err or 0.0, cmp.max_abs_err or 0.0)
            worst.max_rel_err = max(worst.max_rel_err or 0.0, cmp.max_rel_err or 0.0)
        elif isinstance(o, torch.Tensor):
            return Comparison(False, reason=f"{where}: got a tensor, expected {type(r).__name__}")
        elif isinstance(r, float) and isinstance(o, int | float) and not isinstance(o, bool):
            if not (math.isclose(o, r, rel_tol=1e-6, abs_tol=1e-6) or (math.isnan(o) and math.isnan(r))):
                return Comparison(False, reason=f"{where}: {o!r}, expected {r!r}")
        elif type(o) is not type(r) or o != r:
            return Comparison(False, reason=f"{where}: {o!r}, expected {r!r}")
    return worst


def _pairs(out: Any, ref: Any, where: str) -> list[tuple[str, Any, Any]]:
    """Leaves of the reference structure paired with the candidate's; a mismatch becomes one leaf pair."""
    if isinstance(ref, list | tuple):
        if not isinstance(out, list | tuple) or len(out) != len(ref):
            n = len(out) if isinstance(out, list | tuple) else None
            got = f"{type(out).__name__} of {n}" if n is not None else type(out).__name__
            return [(where, _Mismatch(f"{got}, expected {type(ref).__name__} of {len(ref)}"), ref)]
        pairs: list[tuple[str, Any, Any]] = []
        for i, (o, r) in enumerate(zip(out, ref, strict=True)):
            pairs += _pairs(o, r, f"{where}[{i}]")
        return pairs
    return [(where, out, ref)]


class _Mismatch:
    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def output_storages(out: Any) -> set[int]:
    """Base data pointers of every tensor in an output, to spot buffers reused across calls."""
    ptrs: set[int] = set()
    for _, o, _r in _pairs(out, out, "output"):
        if isinstance(o, torch.Tensor) and o.numel() > 0:
            ptrs.add(o.untyped_storage().data_ptr())
    return ptrs


def detached_copy(out: Any) -> Any:
    """A snapshot of an output, taken right after the call that produced it."""
    if type(out) is torch.Tensor:
        return out.detach().clone()
    if isinstance(out, tuple):
        return tuple(detached_copy(o) for o in out)
    if isinstance(out, list):
        return [detached_copy(o) for o in out]
    return out


def bitwise_differs(a: Any, b: Any) -> bool:
    from kernelevolve.search.inputs import same_bits

    for _, x, y in _pairs(a, b, "output"):
        if isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor):
            if not same_bits(x, y):
                return True
        elif x != y:
            return True
    return False


def _fmt(x: float) -> str:
    return "inf" if math.isinf(x) else f"{x:.3g}"
