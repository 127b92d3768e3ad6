"""Kernel text for one fusion group: fills a template's slots from the group's nodes.

``KernelWriter(group, ...)`` renders the group's @triton.jit kernel (``source``) and records the
launch arguments the launcher must pass (``launch_args``): pointers for external operands and
outputs, sizes, and the broadcast strides of each.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kernelevolve.knowledge.templates import kernel_source
from kernelevolve.search.capture import GraphNode, TensorMeta
from kernelevolve.search.lowering.partition import Group, _canon, base_name, norm_dim, refs
from kernelevolve.search.lowering.pointwise_ops import (
    POINTWISE,
    TL_DTYPES,
    Expr,
    LoweringError,
    Operand,
    expression,
    is_float,
    literal,
)
from kernelevolve.search.lowering.variants import Variant

NEG_INF = '(-float("inf"))'
POS_INF = 'float("inf")'


@dataclass
class Param:
    var: str  # in-kernel base name: a0, o1 ...
    value: str  # launcher variable passed as the pointer
    squeezed: bool
    vector: bool  # row kernels: varies along k


@dataclass
class KernelWriter:
    group: Group
    kid: int
    meta: dict[str, TensorMeta | None]
    constants: dict[str, GraphNode]
    variant: Variant
    params: list[Param] = field(default_factory=list)
    _external: dict[tuple[str, bool, str], str] = field(default_factory=dict)
    _loads: dict[str, list[str]] = field(default_factory=dict)
    _uniform: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        fp64 = any(m is not None and m.dtype == "float64" for m in self.meta.values())
        self.e = Expr("tl.float64" if fp64 else "tl.float32")
        self.name = f"_k{self.kid}_{self.group.kind}"

    # -- operands ------------------------------------------------------------------------------
    def dtype(self, ref: str) -> str:
        if ref in self.constants:
            m = self.constants[ref].meta
            return m.dtype if m else "float32"
        m = self.meta.get(ref)
        if m is None:
            raise LoweringError(f"value {ref} has no tensor metadata")
        return m.dtype

    def var(self, ref: str) -> str:
        alias = self.group.aliases.get(ref)
        if alias is not None:
            src, index = alias
            return self.var(src) if index < 0 else f"v_{src}_{index}"
        return f"v_{ref}"

    def operand(self, value: Any, section: str, squeezed: bool = False) -> Any:
        """A node argument as an Operand (tensor refs) or a Python scalar (everything else)."""
        if isinstance(value, dict) and "ref" in value:
            ref = value["ref"]
            if ref in self.constants:
                node = self.constants[ref]
                scalar = node.args[-1] if node.args else node.kwargs.get("fill_value", 0)
                if isinstance(scalar, dict) and "float" in scalar:
                    scalar = float(scalar["float"])
                dtype = self.dtype(ref)
                lit = literal(float(scalar) if is_float(dtype) else scalar)
                return Operand(self.e.cast(lit, dtype), dtype)
            if ref in self.group.members:
                return Operand(self.var(ref), self.dtype(ref))
            return Operand(self.load(ref, section, squeezed), self.dtype(ref))
        if isinstance(value, dict) and "float" in value:
            return float(value["float"])
        return value

    def load(self, ref: str, section: str, squeezed: bool) -> str:
        key = (ref, squeezed, section)
        if key in self._external:
            return self._external[key]
        param = self.param_for(ref, squeezed)
        var = f"{param.var}_{section[0]}"
        self._external[key] = var
        conv = f".to({self.e.acc})" if is_float(self.dtype(ref)) else ""
        self._loads.setdefault(section, []).append(f"{var} = {self.load_expr(param, section)}{conv}")
        return var

    def param_for(self, ref: str, squeezed: bool, output: bool = False) -> Param:
        for p in self.params:
            if p.value == f"v_{ref}" and p.squeezed == squeezed and p.var.startswith("o" if output else "a"):
                return p
        meta = self.meta[ref]
        assert meta is not None
        vector = True
        if self.group.kind == "row":
            k = self.group.k
            canon = _canon(meta.sym_shape, self.group.rank, k if squeezed else -1)
            vector = canon[k] != 1
        count = sum(1 for p in self.params if p.var.startswith("o" if output else "a"))
        param = Param(f"{'o' if output else 'a'}{count}", f"v_{ref}", squeezed, vector)
        self.params.append(param)
        return param

    # -- index expressions ---------------------------------------------------------------------
    def offset(self, p: Param, section: str) -> str:
        kind, rank = self.group.kind, self.group.rank
        if kind == "gemm" and p.squeezed:  # the M-split view: rows decomposed into leading dims
            lead = len(self.group.split or []) - 1
            rows = " + ".join(f"r{d}[:, None] * {p.var}_s{d}" for d in range(lead))
            return f"{rows} + rn[None, :] * {p.var}_s{lead}"
        if kind == "gemm":
            return f"bid * {p.var}_s0 + rm[:, None] * {p.var}_s1 + rn[None, :] * {p.var}_s2"
        if kind == "row":
            base = " + ".join(f"i{d} * {p.var}_s{d}" for d in range(rank) if d != self.group.k) or "rows * 0"
            if p.vector:
                return f"({base})[:, None] + cols[None, :] * {p.var}_s{self.group.k}"
            return f"({base})[:, None]"
        if kind == "flat" and section == "final":
            return "0"
        return " + ".join(f"i{d} * {p.var}_s{d}" for d in range(rank)) or "offs * 0"

    def load_expr(self, p: Param, section: str) -> str:
        off = self.offset(p, section)
        if self.masked(p, section):
            return f"tl.load({p.var}_ptr + {off}, mask={self.mask_of(p)}, other=0)"
        return f"tl.load({p.var}_ptr + {off})"

    def mask_of(self, p: Param) -> str:
        return "rmask[:, None]" if self.group.kind == "row" and not p.vector else "mask"

    def masked(self, p: Param, section: str) -> bool:
        return not (self.group.kind == "flat" and section == "final")

    def store(self, name: str, section: str) -> str:
        member = self.group.members[name]
        p = self.param_for(name, member.squeezed, output=True)
        value = self.var(name)
        if name in self._uniform and self.masked(p, section):
            zeros = {
                "gemm": "tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)",
                "row": f"tl.zeros([ROWS, {'BLOCK_N' if p.vector else 1}], dtype=tl.float32)",
            }
            value = f"({value}) + {zeros.get(self.group.kind, 'tl.zeros([BLOCK], dtype=tl.float32)')}"
        off = self.offset(p, section)
        if self.masked(p, section):
            return f"tl.store({p.var}_ptr + {off}, {value}, mask={self.mask_of(p)})"
        return f"tl.store({p.var}_ptr + {off}, {value})"

    # -- node bodies ---------------------------------------------------------------------------
    def pointwise_line(self, node: GraphNode, section: str) -> str:
        squeezed = self.group.members[node.name].squeezed
        args = [self.operand(a, section, squeezed) for a in node.args]
        kwargs = {k: self.operand(v, section, squeezed) for k, v in node.kwargs.items()}
        if not any(isinstance(a, Operand) and not a.expr[:1].isdigit() for a in [*args, *kwargs.values()]):
            self._uniform.add(node.name)
        if all(r in self.constants for r in refs(node.args) + refs(node.kwargs)):
            self._uniform.add(node.name)
        assert node.meta is not None
        return f"{self.var(node.name)} = {expression(self.e, node.op, args, kwargs, node.meta.dtype)}"

    def row_lines(self, node: GraphNode) -> list[str]:
        name, out = base_name(node.op), self.var(node.name)
        x = self.operand(node.args[0], "body")
        dt = x.dtype
        fx = (
            self.e.f(x)
            if is_float(dt)
            or name in ("mean", "var", "_softmax", "_log_softmax", "native_layer_norm", "linalg_vector_norm")
            else x.expr
        )
        lines: list[str] = []
        n = "n_cols"
        if name == "sum":
            out_dt = node.meta.dtype if node.meta else dt
            v = fx if is_float(out_dt) else f"({x.expr}).to(tl.int64)"
            zero = "0.0" if is_float(out_dt) else "0"
            lines.append(f"{out} = tl.sum(tl.where(mask, {v}, {zero}), axis=1)[:, None]")
        elif name == "mean":
            lines.append(f"{out} = tl.sum(tl.where(mask, {fx}, 0.0), axis=1)[:, None] / {n}")
        elif name == "linalg_vector_norm":
            term, kind, finish = norm_parts(node, fx)
            fill = {"sum": "0.0", "max": NEG_INF, "min": POS_INF}[kind]
            lines.append(
                f"{out} = " + finish.format(s=f"tl.{kind}(tl.where(mask, {term}, {fill}), axis=1)[:, None]")
            )
        elif name in ("amax", "amin"):
            fn, fill = ("max", NEG_INF) if name == "amax" else ("min", POS_INF)
            lines.append(f"{out} = tl.{fn}(tl.where(mask, {fx}, {fill}), axis=1)[:, None]")
        elif name in ("max", "min"):
            fn, fill = ("max", NEG_INF) if name == "max" else ("min", POS_INF)
            masked = f"tl.where(mask, {fx}, {fill})"
            lines.append(f"{out}_0 = tl.{fn}({masked}, axis=1)[:, None]")
            lines.append(f"{out}_1 = tl.arg{fn}({masked}, axis=1)[:, None]")
        elif name in ("argmax", "argmin"):
            fill = NEG_INF if name == "argmax" else POS_INF
            lines.append(f"{out} = tl.{name}(tl.where(mask, {fx}, {fill}), axis=1)[:, None]")
        elif name == "var":
            corr = node.kwargs.get("correction", 1)
            corr = 1 if corr is None else corr
            lines.append(f"{out}_mu = tl.sum(tl.where(mask, {fx}, 0.0), axis=1)[:, None] / {n}")
            lines.append(f"{out}_d = tl.where(mask, {fx} - {out}_mu, 0.0)")
            lines.append(
                f"{out} = tl.sum({out}_d * {out}_d, axis=1)[:, None] / ({n} - {literal(float(corr)).expr})"
            )
        elif name in ("_softmax", "_log_softmax"):
            lines.append(f"{out}_m = tl.max(tl.where(mask, {fx}, {NEG_INF}), axis=1)[:, None]")
            lines.append(f"{out}_e = tl.where(mask, tl.exp({fx} - {out}_m), 0.0)")
            lines.append(f"{out}_s = tl.sum({out}_e, axis=1)[:, None]")
            if name == "_softmax":
                lines.append(f"{out} = {out}_e / {out}_s")
            else:
                lines.append(f"{out} = {fx} - {out}_m - tl.log({out}_s)")
        elif name == "native_layer_norm":
            eps = literal(float(node.args[4])).expr
            lines.append(f"{out}_1 = tl.sum(tl.where(mask, {fx}, 0.0), axis=1)[:, None] / {n}")
            lines.append(f"{out}_d = tl.where(mask, {fx} - {out}_1, 0.0)")
            lines.append(f"{out}_2 = tl.rsqrt(tl.sum({out}_d * {out}_d, axis=1)[:, None] / {n} + {eps})")
            y = f"{out}_d * {out}_2"
            if node.args[2] is not None:
                y = f"{y} * {self.e.f(self.operand(node.args[2], 'body'))}"
            if node.args[3] is not None:
                y = f"{y} + {self.e.f(self.operand(node.args[3], 'body'))}"
            lines.append(f"{out}_0 = {y}")
        elif name == "gather":
            idx = self.operand(node.args[2], "body")
            zero = "0.0" if is_float(dt) else "0"
            v = fx if is_float(dt) else x.expr
            lines.append(
                f"{out} = tl.sum(tl.where(mask & (cols[None, :] == {idx.expr}), {v}, {zero}), axis=1)[:, None]"
            )
        else:
            raise LoweringError(f"{node.op}: no row template")
        return lines

    # -- sections per kind ---------------------------------------------------------------------
    def render(self) -> str:
        kind = self.group.kind
        if kind == "pointwise":
            return self.render_pointwise()
        if kind == "row":
            return self.render_row()
        if kind == "flat":
            return self.render_flat()
        if kind == "gemm":
            return self.render_gemm()
        raise LoweringError(f"no kernel writer for group kind {kind}")

    def body_for(self, nodes: list[GraphNode], section: str) -> list[str]:
        lines: list[str] = []
        for node in nodes:
            if self.group.kind == "row" and base_name(node.op) not in POINTWISE:
                lines += self.row_lines(node)
            else:
                lines.append(self.pointwise_line(node, section))
        return lines

    def outputs_in(self, section_members: set[str], section: str) -> list[str]:
        return [self.store(o, section) for o in self.group.outputs if o in section_members]

    @property
    def stride_rank(self) -> int:
        return 3 if self.group.kind == "gemm" else self.group.rank

    def param_rank(self, p: Param) -> int:
        if self.group.kind == "gemm" and p.squeezed:
            return len(self.group.split or [])
        return self.stride_rank

    def split_sizes(self) -> list[str]:
        """gemm: kernel parameters holding the leading dims of the M-split view."""
        if self.group.kind != "gemm" or self.group.split is None:
            return []
        return [f"gsize{d}" for d in range(len(self.group.split) - 1)]

    def common_params(self) -> tuple[str, str]:
        names = [f"{p.var}_ptr" for p in self.params] + self.split_sizes()
        ptrs = ", ".join(names)
        strides = ", ".join(f"{p.var}_s{d}" for p in self.params for d in range(self.param_rank(p)))
        return ptrs + ("," if ptrs else ""), strides + ("," if strides else "")

    def index_lines(self, flat_var: str, skip: int = -1) -> list[str]:
        dims = [d for d in range(self.group.rank) if d != skip]
        if not dims:
            return []
        lines = [f"rem = {flat_var}"]
        for d in reversed(dims[1:]):
            lines += [f"i{d} = rem % size{d}", f"rem = rem // size{d}"]
        lines.append(f"i{dims[0]} = rem")
        return lines

    def shape_params(self) -> str:
        return " ".join(f"size{d}," for d in range(self.group.rank))

    def render_pointwise(self) -> str:
        body = self.body_for(self.group.nodes, "body")
        stores = self.outputs_in(set(self.group.members), "body")
        body = self._loads.get("body", []) + body + stores
        ptrs, strides = self.common_params()
        slots = {
            "params": ptrs,
            "shape": self.shape_params(),
            "strides": strides,
            "index": "\n".join(self.index_lines("offs")),
            "body": "\n".join(body),
        }
        return kernel_source("pointwise", "pointwise_kernel", self.name, slots)

    def render_row(self) -> str:
        body = self.body_for(self.group.nodes, "body")
        stores = self.outputs_in(set(self.group.members), "body")
        body = self._loads.get("body", []) + body + stores
        ptrs, strides = self.common_params()
        slots = {
            "params": ptrs,
            "shape": self.shape_params(),
            "strides": strides,
            "index": "\n".join(self.index_lines("rows", self.group.k)),
            "body": "\n".join(body),
        }
        return kernel_source("row_reduce", "row_kernel", self.name, slots)

    def render_flat(self) -> str:
        g = self.group
        loop_nodes = [n for n in g.nodes if not g.members[n.name].scalar_stage]
        reductions = [n for n in g.nodes if g.members[n.name].scalar_stage and _is_flat_reduction(n)]
        final_nodes = [n for n in g.nodes if g.members[n.name].scalar_stage and not _is_flat_reduction(n)]
        loop = self.body_for(loop_nodes, "loop")
        init: list[str] = []
        final: list[str] = []
        for j, node in enumerate(reductions):
            name = base_name(node.op)
            x = self.operand(node.args[0], "loop")
            out_dt = node.meta.dtype if node.meta else x.dtype
            acc_dt = self.e.acc if is_float(out_dt) else "tl.int64"
            v = self.e.f(x) if is_float(out_dt) else f"({x.expr}).to(tl.int64)"
            finish = "{s}"
            if name == "linalg_vector_norm":
                v, kind, finish = norm_parts(node, self.e.f(x))
                name = {"sum": "sum", "max": "amax", "min": "amin"}[kind]
            if name in ("amax", "max", "amin", "min"):
                fn, fill = ("maximum", NEG_INF) if name in ("amax", "max") else ("minimum", POS_INF)
                init.append(f"acc{j} = tl.full([BLOCK], {fill}, dtype={acc_dt})")
                loop.append(f"acc{j} = tl.{fn}(acc{j}, tl.where(mask, {v}, {fill}))")
                final.append(f"{self.var(node.name)} = " + finish.format(s=f"tl.{fn[:3]}(acc{j}, axis=0)"))
            else:
                init.append(f"acc{j} = tl.zeros([BLOCK], dtype={acc_dt})")
                loop.append(f"acc{j} += tl.where(mask, {v}, 0)")
                total = finish.format(s=f"tl.sum(acc{j}, axis=0)")
                final.append(f"{self.var(node.name)} = {total}" + (" / numel" if name == "mean" else ""))
        final += self.body_for(final_nodes, "final")
        loop_members = {n.name for n in loop_nodes} | {a for a in g.aliases if not g.members[a].scalar_stage}
        loop += self.outputs_in(loop_members, "loop")
        final += self.outputs_in(set(g.members) - loop_members, "final")
        ptrs, strides = self.common_params()
        slots = {
            "params": ptrs,
            "shape": self.shape_params(),
            "strides": strides,
            "init": "\n".join(init),
            "index": "\n".join(self.index_lines("offs")),
            "body": "\n".join(self._loads.get("loop", []) + loop),
            "final": "\n".join(self._loads.get("final", []) + final),
        }
        return kernel_source("flat_reduce", "flat_reduce_kernel", self.name, slots)

    def render_gemm(self) -> str:
        g = self.group
        head, rest = g.nodes[0], g.nodes[1:]
        name = base_name(head.op)
        lines: list[str] = []
        if name == "addmm":
            beta = float(head.kwargs.get("beta", 1))
            alpha = float(head.kwargs.get("alpha", 1))
            bias = self.operand(head.args[0], "epilogue")
            acc = "acc" if alpha == 1 else f"acc * {literal(alpha).expr}"
            b = self.e.f(bias) if beta == 1 else f"{self.e.f(bias)} * {literal(beta).expr}"
            lines.append(f"{self.var(head.name)} = {acc} + {b}")
        else:
            lines.append(f"{self.var(head.name)} = acc")
        lines += [self.pointwise_line(n, "epilogue") for n in rest]
        lines += self.outputs_in(set(g.members), "epilogue")
        sizes = self.split_sizes()
        index: list[str] = []
        if sizes:  # split rm into the leading dims of the view, innermost first
            index = ["rrem = rm"]
            for d in range(len(sizes) - 1, 0, -1):
                index += [f"r{d} = rrem % gsize{d}", f"rrem = rrem // gsize{d}"]
            index.append("r0 = rrem")
        ptrs, strides = self.common_params()
        slots = {
            "params": ptrs,
            "strides": strides,
            "epilogue": "\n".join(index + self._loads.get("epilogue", []) + lines),
        }
        return kernel_source("gemm_epilogue", "gemm_kernel", self.name, slots)


def _is_flat_reduction(node: GraphNode) -> bool:
    return base_name(node.op) in ("sum", "mean", "amax", "amin", "max", "min", "linalg_vector_norm")


def norm_parts(node: GraphNode, fx: str) -> tuple[str, str, str]:
    """(per-element term, reduction: "sum"|"max"|"min", finish with {s}) of linalg_vector_norm."""
    order = node.args[1] if len(node.args) > 1 else node.kwargs.get("ord", 2)
    if isinstance(order, dict) and "float" in order:
        order = float(order["float"])
    order = float(order)
    if order == 2:
        return f"({fx} * {fx})", "sum", "tl.sqrt({s})"
    if order == 1:
        return f"tl.abs({fx})", "sum", "{s}"
    if order in (float("inf"), float("-inf")):
        return f"tl.abs({fx})", "max" if order > 0 else "min", "{s}"
    if order > 0:
        return f"tl.exp({order!r} * tl.log(tl.abs({fx})))", "sum", f"tl.exp(tl.log({{s}}) / {order!r})"
    raise LoweringError(f"{node.op}: norm of order {order} is not covered")


def row_dim(node: GraphNode, rank: int) -> int:
    return norm_dim(int(node.args[1]), rank)


def tl_dtype(dtype: str) -> str:
    return TL_DTYPES[dtype]
