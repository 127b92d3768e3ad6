"""Elementwise ATen ops as tl.* expressions: the body of every fused kernel.

``expression(op, args, kwargs, out_dtype)`` returns the Triton expression for one node; tensor
operands arrive as ``Operand`` (a variable or literal and its torch dtype), scalars as Python values.
Float math runs in the accumulator dtype (fp32, or fp64 for fp64 graphs); stores cast back.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

FLOAT_DTYPES = {"float32", "float16", "bfloat16", "float64"}
TL_DTYPES = {
    "float32": "tl.float32",
    "float16": "tl.float16",
    "bfloat16": "tl.bfloat16",
    "float64": "tl.float64",
    "int64": "tl.int64",
    "int32": "tl.int32",
    "int16": "tl.int16",
    "int8": "tl.int8",
    "uint8": "tl.uint8",
    "bool": "tl.int1",
}


class LoweringError(ValueError):
    """A node the lowering cannot express; the message names the op and why."""


@dataclass(frozen=True)
class Operand:
    expr: str
    dtype: str  # torch dtype name; "float"/"int"/"bool" for Python scalars


def literal(value: Any) -> Operand:
    if isinstance(value, bool):
        return Operand("True" if value else "False", "bool")
    if isinstance(value, int):
        return Operand(str(value), "int")
    if isinstance(value, float):
        if math.isinf(value):
            return Operand('float("inf")' if value > 0 else '(-float("inf"))', "float")
        if math.isnan(value):
            return Operand('float("nan")', "float")
        return Operand(repr(value), "float")
    if isinstance(value, dict) and "float" in value:
        return literal(float(value["float"]))
    raise LoweringError(f"unsupported scalar {value!r}")


def is_float(dtype: str) -> bool:
    return dtype in FLOAT_DTYPES or dtype == "float"


class Expr:
    """Builds expressions for one kernel whose float math runs in ``acc`` (a tl dtype)."""

    def __init__(self, acc: str = "tl.float32") -> None:
        self.acc = acc

    def f(self, o: Operand) -> str:
        """The operand as a float of the accumulator type."""
        if is_float(o.dtype):
            return f"({o.expr})"
        if o.dtype in ("int", "bool") and o.expr not in ("True", "False"):
            return f"({o.expr})"  # Python literal: Triton promotes it
        return f"({o.expr}).to({self.acc})"

    def cast(self, o: Operand, dtype: str) -> str:
        if dtype == "bool":
            return f"({o.expr} != 0)"
        if is_float(dtype):
            if dtype in ("float16", "bfloat16") and self.acc != TL_DTYPES[dtype]:
                # round like torch does, then keep computing in the accumulator type
                return f"({self.f(o)}.to({TL_DTYPES[dtype]}).to({self.acc}))"
            return self.f(o)
        if o.dtype in ("int", "float", "bool") and o.expr[:1].isdigit():
            return o.expr
        return f"({o.expr}).to({TL_DTYPES[dtype]})"


def _pow(e: Expr, x: Operand, p: Any) -> str:
    fx = e.f(x)
    if isinstance(p, int | float) and float(p).is_integer() and -4 <= p <= 8:
        n = int(p)
        if n == 0:
            return f"({fx} * 0.0 + 1.0)"
        prod = " * ".join([fx] * abs(n))
        return f"({prod})" if n > 0 else f"(1.0 / ({prod}))"
    if p == 0.5:
        return f"tl.sqrt({fx})"
    if p == -0.5:
        return f"tl.rsqrt({fx})"
    return f"tl.exp({literal(float(p)).expr} * tl.log({fx}))"


def _tanh(fx: str) -> str:
    return f"(2.0 * tl.sigmoid(2.0 * {fx}) - 1.0)"


def _clamp(e: Expr, x: Operand, lo: Any, hi: Any, out_dtype: str) -> str:
    v = e.f(x) if is_float(out_dtype) else x.expr
    if lo is not None:
        v = f"tl.maximum({v}, {_opnd(lo).expr})"
    if hi is not None:
        v = f"tl.minimum({v}, {_opnd(hi).expr})"
    return v


def _opnd(v: Any) -> Operand:
    return v if isinstance(v, Operand) else literal(v)


def _arith(symbol: str) -> Callable[[Expr, list[Any], dict[str, Any], str], str]:
    def build(e: Expr, args: list[Any], kwargs: dict[str, Any], out: str) -> str:
        a, b = _opnd(args[0]), _opnd(args[1])
        alpha = kwargs.get("alpha", args[2] if len(args) > 2 else 1)
        if is_float(out):
            lhs, rhs = e.f(a), e.f(b)
        else:
            lhs, rhs = a.expr, b.expr
        if alpha != 1:
            rhs = f"({rhs} * {literal(alpha).expr})"
        return f"({lhs} {symbol} {rhs})"

    return build


def _rsub(e: Expr, args: list[Any], kwargs: dict[str, Any], out: str) -> str:
    return _arith("-")(e, [args[1], args[0], *args[2:]], kwargs, out)


def _div(e: Expr, args: list[Any], kwargs: dict[str, Any], out: str) -> str:
    a, b = _opnd(args[0]), _opnd(args[1])
    mode = kwargs.get("rounding_mode", args[2] if len(args) > 2 else None)
    q = f"({e.f(a)} / {e.f(b)})"
    if mode is None:
        return q
    if not is_float(out):
        raise LoweringError("integer division with rounding_mode is not covered")
    return f"tl.floor({q})" if mode == "floor" else f"(tl.where({q} < 0, tl.ceil({q}), tl.floor({q})))"


def _unary(fmt: str) -> Callable[[Expr, list[Any], dict[str, Any], str], str]:
    def build(e: Expr, args: list[Any], kwargs: dict[str, Any], out: str) -> str:
        return fmt.format(x=e.f(_opnd(args[0])))

    return build


def _cmp(symbol: str) -> Callable[[Expr, list[Any], dict[str, Any], str], str]:
    def build(e: Expr, args: list[Any], kwargs: dict[str, Any], out: str) -> str:
        a, b = _opnd(args[0]), _opnd(args[1])
        if is_float(a.dtype) or is_float(b.dtype):
            return f"({e.f(a)} {symbol} {e.f(b)})"
        return f"({a.expr} {symbol} {b.expr})"

    return build


def _gelu(e: Expr, args: list[Any], kwargs: dict[str, Any], out: str) -> str:
    x = e.f(_opnd(args[0]))
    approx = kwargs.get("approximate", args[1] if len(args) > 1 else "none")
    if approx == "tanh":
        inner = f"0.7978845608028654 * ({x} + 0.044715 * {x} * {x} * {x})"
        return f"(0.5 * {x} * (1.0 + {_tanh(inner)}))"
    return f"(0.5 * {x} * (1.0 + tl.erf({x} * 0.7071067811865476)))"


def _where(e: Expr, args: list[Any], kwargs: dict[str, Any], out: str) -> str:
    c, a, b = (_opnd(v) for v in args[:3])
    cond = c.expr if c.dtype == "bool" else f"({c.expr} != 0)"
    if is_float(out):
        return f"tl.where({cond}, {e.f(a)}, {e.f(b)})"
    return f"tl.where({cond}, {a.expr}, {b.expr})"


def _minmax(fn: str) -> Callable[[Expr, list[Any], dict[str, Any], str], str]:
    def build(e: Expr, args: list[Any], kwargs: dict[str, Any], out: str) -> str:
        a, b = _opnd(args[0]), _opnd(args[1])
        if is_float(out):
            return f"tl.{fn}({e.f(a)}, {e.f(b)})"
        return f"tl.{fn}({a.expr}, {b.expr})"

    return build


def _to_copy(e: Expr, args: list[Any], kwargs: dict[str, Any], out: str) -> str:
    return e.cast(_opnd(args[0]), out)


def _identity(e: Expr, args: list[Any], kwargs: dict[str, Any], out: str) -> str:
    return _opnd(args[0]).expr


def _constant(e: Expr, args: list[Any], kwargs: dict[str, Any], out: str) -> str:
    return e.cast(literal(args[-1] if args else kwargs["fill_value"]), out)


def _full_like(value: Any) -> Callable[[Expr, list[Any], dict[str, Any], str], str]:
    def build(e: Expr, args: list[Any], kwargs: dict[str, Any], out: str) -> str:
        v = value if value is not None else args[1]
        return e.cast(literal(float(v) if is_float(out) else v), out)

    return build


def _leaky_relu(e: Expr, args: list[Any], kwargs: dict[str, Any], out: str) -> str:
    x = e.f(_opnd(args[0]))
    slope = args[1] if len(args) > 1 else 0.01
    return f"tl.where({x} > 0, {x}, {x} * {literal(float(slope)).expr})"


def _elu(e: Expr, args: list[Any], kwargs: dict[str, Any], out: str) -> str:
    x = e.f(_opnd(args[0]))
    alpha, scale, in_scale = (list(args[1:]) + [1.0, 1.0, 1.0])[:3]
    neg = (
        f"{literal(float(alpha) * float(scale)).expr} * (tl.exp({x} * {literal(float(in_scale)).expr}) - 1.0)"
    )
    return f"tl.where({x} > 0, {x} * {literal(float(scale)).expr}, {neg})"


def _softplus(e: Expr, args: list[Any], kwargs: dict[str, Any], out: str) -> str:
    x = e.f(_opnd(args[0]))
    beta = float(args[1]) if len(args) > 1 else 1.0
    thr = float(args[2]) if len(args) > 2 else 20.0
    bx = f"({x} * {literal(beta).expr})"
    return f"tl.where({bx} > {literal(thr).expr}, {x}, tl.log(1.0 + tl.exp({bx})) / {literal(beta).expr})"


def _hardtanh(e: Expr, args: list[Any], kwargs: dict[str, Any], out: str) -> str:
    lo = args[1] if len(args) > 1 else -1.0
    hi = args[2] if len(args) > 2 else 1.0
    return _clamp(e, _opnd(args[0]), float(lo), float(hi), out)


def _clamp_node(e: Expr, args: list[Any], kwargs: dict[str, Any], out: str) -> str:
    lo = kwargs.get("min", args[1] if len(args) > 1 else None)
    hi = kwargs.get("max", args[2] if len(args) > 2 else None)
    return _clamp(e, _opnd(args[0]), lo, hi, out)


def _logical(symbol: str) -> Callable[[Expr, list[Any], dict[str, Any], str], str]:
    def build(e: Expr, args: list[Any], kwargs: dict[str, Any], out: str) -> str:
        a, b = _opnd(args[0]), _opnd(args[1])
        return f"(({a.expr} != 0) {symbol} ({b.expr} != 0))"

    return build


def _batch_norm_eval(e: Expr, args: list[Any], kwargs: dict[str, Any], out: str) -> str:
    """(x - mean) * rsqrt(var + eps) * w + b; w, b may be None (affine=False)."""
    x, w, b, mean, var, eps = args
    y = f"(({e.f(x)} - {e.f(mean)}) * tl.rsqrt({e.f(var)} + {literal(float(eps)).expr}))"
    if w is not None:
        y = f"({y} * {e.f(w)})"
    if b is not None:
        y = f"({y} + {e.f(b)})"
    return y


Builder = Callable[[Expr, list[Any], dict[str, Any], str], str]

POINTWISE: dict[str, Builder] = {
    "add": _arith("+"),
    "sub": _arith("-"),
    "mul": _arith("*"),
    "rsub": _rsub,
    "div": _div,
    "true_divide": _div,
    "neg": _unary("(-{x})"),
    "exp": _unary("tl.exp({x})"),
    "exp2": _unary("tl.exp2({x})"),
    "expm1": _unary("(tl.exp({x}) - 1.0)"),
    "log": _unary("tl.log({x})"),
    "log2": _unary("(tl.log({x}) * 1.4426950408889634)"),
    "log1p": _unary("tl.log(1.0 + {x})"),
    "sqrt": _unary("tl.sqrt({x})"),
    "rsqrt": _unary("tl.rsqrt({x})"),
    "reciprocal": _unary("(1.0 / {x})"),
    "abs": _unary("tl.abs({x})"),
    "relu": _unary("tl.maximum({x}, 0.0)"),
    "sigmoid": _unary("tl.sigmoid({x})"),
    "tanh": _unary(_tanh("{x}")),
    "silu": _unary("({x} * tl.sigmoid({x}))"),
    "mish": _unary("({x} * " + _tanh("tl.where({x} > 20.0, {x}, tl.log(1.0 + tl.exp({x})))") + ")"),
    "hardsigmoid": _unary("tl.minimum(tl.maximum({x} / 6.0 + 0.5, 0.0), 1.0)"),
    "hardswish": _unary("({x} * tl.minimum(tl.maximum({x} + 3.0, 0.0), 6.0) / 6.0)"),
    "erf": _unary("tl.erf({x})"),
    "sin": _unary("tl.sin({x})"),
    "cos": _unary("tl.cos({x})"),
    "floor": _unary("tl.floor({x})"),
    "ceil": _unary("tl.ceil({x})"),
    "sign": _unary("tl.where({x} > 0, 1.0, tl.where({x} < 0, -1.0, 0.0))"),
    "gelu": _gelu,
    "batch_norm_eval": _batch_norm_eval,
    "pow": lambda e, a, k, o: (
        _pow(e, _opnd(a[0]), a[1])
        if not isinstance(a[1], Operand)
        else f"tl.exp({e.f(a[1])} * tl.log({e.f(_opnd(a[0]))}))"
    ),
    "maximum": _minmax("maximum"),
    "minimum": _minmax("minimum"),
    "where": _where,
    "clamp": _clamp_node,
    "clamp_min": lambda e, a, k, o: _clamp(e, _opnd(a[0]), a[1], None, o),
    "clamp_max": lambda e, a, k, o: _clamp(e, _opnd(a[0]), None, a[1], o),
    "hardtanh": _hardtanh,
    "leaky_relu": _leaky_relu,
    "elu": _elu,
    "softplus": _softplus,
    "eq": _cmp("=="),
    "ne": _cmp("!="),
    "lt": _cmp("<"),
    "le": _cmp("<="),
    "gt": _cmp(">"),
    "ge": _cmp(">="),
    "logical_and": _logical("&"),
    "logical_or": _logical("|"),
    "logical_not": lambda e, a, k, o: f"({_opnd(a[0]).expr} == 0)",
    "bitwise_not": lambda e, a, k, o: f"({_opnd(a[0]).expr} == 0)",
    "_to_copy": _to_copy,
    "clone": _identity,
    "alias": _identity,
    "lift_fresh_copy": _identity,
    "detach": _identity,
    "copy": lambda e, a, k, o: _opnd(a[1]).expr,
    "scalar_tensor": _constant,
    "full": _constant,
    "zeros_like": _full_like(0),
    "ones_like": _full_like(1),
    "full_like": _full_like(None),
}


def base_name(op: str) -> str:
    """``aten.add.Tensor`` -> ``add``; ``aten.relu_.default`` -> ``relu`` (in-place forms too)."""
    parts = op.split(".")
    name = parts[1] if parts[0] == "aten" and len(parts) > 1 else parts[-1]
    return name[:-1] if name.endswith("_") and not name.startswith("_") else name


def is_pointwise(op: str) -> bool:
    return op.startswith("aten.") and base_name(op) in POINTWISE


def expression(e: Expr, op: str, args: list[Any], kwargs: dict[str, Any], out_dtype: str) -> str:
    name = base_name(op)
    try:
        return POINTWISE[name](e, args, kwargs, out_dtype)
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise LoweringError(f"{op}: cannot lower these arguments ({exc})") from exc
