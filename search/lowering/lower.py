"""Lower a captured graph to one complete candidate file: kernels, launcher, ModelNew.

``lower(graph, problem_source, variant)`` partitions the graph (partition.py), renders one kernel
per group from the template library (kernels.py, sparse.py) and writes ``ModelNew.forward`` as
the launcher: views and sizes in plain Python, outputs allocated with ``torch.empty``, kernels
launched with int-literal tunables. Sizes stay symbolic where torch.export kept them so: they are
read from the inputs' shapes at run time, so odd test shapes work.
"""

from __future__ import annotations

import re
from typing import Any

from kernelevolve.knowledge.templates import function_source
from kernelevolve.search.capture import GraphNode, OpGraph, TensorMeta
from kernelevolve.search.lowering.kernels import KernelWriter
from kernelevolve.search.lowering.model_source import attr_path, model_parts, skeleton_init
from kernelevolve.search.lowering.partition import Group, Partitioner, base_name, norm_dim, refs
from kernelevolve.search.lowering.pointwise_ops import LoweringError
from kernelevolve.search.lowering.rewrite import rewrite
from kernelevolve.search.lowering.sparse import SPARSE_KERNELS, sparse_launch
from kernelevolve.search.lowering.variants import Variant

_IDENT = re.compile(r"[A-Za-z_]\w*")


class Launcher:
    """Python source of ModelNew.forward for one graph."""

    def __init__(self, graph: OpGraph) -> None:
        self.graph = graph
        self.meta: dict[str, TensorMeta | None] = {i.name: i.meta for i in graph.inputs}
        for node in graph.nodes:
            self.meta[node.name] = node.meta
        self.symbols: dict[str, str] = {}
        self.lines: list[str] = []
        self.device: str | None = None
        self._user_dev = False

    def bind_inputs(self, forward_params: list[str]) -> None:
        for inp in self.graph.inputs:
            if inp.kind == "user_input":
                assert isinstance(inp.target, int)
                if inp.target >= len(forward_params):
                    raise LoweringError("forward takes *args: cannot name its inputs")
                self.lines.append(f"v_{inp.name} = {forward_params[inp.target]}")
            elif inp.kind in ("parameter", "buffer"):
                self.lines.append(f"v_{inp.name} = {attr_path(str(inp.target))}")
            else:
                raise LoweringError(f"constant tensor created in forward ({inp.target}) is not covered")
            if inp.meta is None:
                continue
            if self.device is None or inp.kind == "user_input" and not self._user_dev:
                self._user_dev = inp.kind == "user_input"
                self.device = f"v_{inp.name}.device"
            for d, size in enumerate(inp.meta.sym_shape):
                if isinstance(size, str) and _IDENT.fullmatch(size) and size not in self.symbols:
                    self.symbols[size] = f"v_{inp.name}.shape[{d}]"

    def size(self, size: int | str) -> str:
        if isinstance(size, int):
            return str(size)

        def sub(match: re.Match[str]) -> str:
            name = match.group(0)
            if name in self.symbols:
                return self.symbols[name]
            raise LoweringError(f"symbolic size {size!r} depends on {name}, which no input shape gives")

        return "(" + _IDENT.sub(sub, size) + ")"

    def shape(self, sym: list[int | str]) -> str:
        parts = [self.size(s) for s in sym]
        return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"

    def py(self, value: Any) -> str:
        if isinstance(value, dict):
            if "ref" in value:
                return f"v_{value['ref']}"
            if "sym" in value:
                return self.size(value["sym"])
            if "dtype" in value:
                return f"torch.{value['dtype']}"
            if "float" in value:
                return f'float("{value["float"]}")'
            raise LoweringError(f"cannot pass {value} in the launcher")
        if isinstance(value, list):
            return "[" + ", ".join(self.py(v) for v in value) + "]"
        return repr(value)

    def alloc(self, name: str, var: str | None = None) -> None:
        meta = self.meta[name]
        assert meta is not None and self.device is not None
        self.lines.append(
            f"{var or 'v_' + name} = torch.empty({self.shape(meta.sym_shape)}, device={self.device}, "
            f"dtype=torch.{meta.dtype})"
        )

    # -- launcher steps --------------------------------------------------------------------------
    def sym_node(self, node: GraphNode) -> None:
        if node.sym is None:
            raise LoweringError(f"{node.op}: not a size computation")
        self.lines.append(f"v_{node.name} = {self.size(node.sym['sym'])}")

    def view_node(self, node: GraphNode) -> None:
        name = base_name(node.op)
        src = self.py(node.args[0])
        a = node.args
        out = f"v_{node.name}"
        if name in ("view", "_unsafe_view", "reshape"):
            self.lines.append(f"{out} = {src}.reshape({self.py(a[1])})")
        elif name == "permute":
            self.lines.append(f"{out} = {src}.permute({self.py(a[1])})")
        elif name == "t":
            self.lines.append(f"{out} = {src}.t()")
        elif name == "transpose":
            self.lines.append(f"{out} = {src}.transpose({a[1]}, {a[2]})")
        elif name == "expand":
            self.lines.append(f"{out} = {src}.expand({self.py(a[1])})")
        elif name == "unsqueeze":
            self.lines.append(f"{out} = {src}.unsqueeze({a[1]})")
        elif name == "squeeze":
            dims = a[1] if len(a) > 1 else None
            if dims is None:
                self.lines.append(f"{out} = {src}.squeeze()")
            else:
                dims = dims if isinstance(dims, list) else [dims]
                src_meta = self.meta[refs(a[0])[0]]
                rank = len(src_meta.sym_shape) if src_meta else 0
                expr = src
                for d in sorted((norm_dim(d, rank) for d in dims), reverse=True):
                    expr += f".squeeze({d})"
                self.lines.append(f"{out} = {expr}")
        elif name == "slice":
            dim = a[1] if len(a) > 1 else 0
            start = a[2] if len(a) > 2 and a[2] is not None else 0
            end = a[3] if len(a) > 3 and a[3] is not None else 2**62
            step = a[4] if len(a) > 4 else 1
            if step != 1 or not isinstance(start, int) or not isinstance(end, int) or start < 0 or end < 0:
                raise LoweringError(f"{node.op}: only forward slices with step 1 are covered")
            self.lines.append(
                f"{out} = {src}.narrow({dim}, {start}, min({end}, {src}.shape[{dim}]) - {start})"
            )
        elif name == "select":
            self.lines.append(f"{out} = {src}.select({a[1]}, {self.py(a[2])})")
        elif name in ("alias", "detach"):
            self.lines.append(f"{out} = {src}")
        else:
            raise LoweringError(f"{node.op}: no launcher view")

    def group_launch(self, group: Group, writer: KernelWriter, variant: Variant) -> None:
        kind = group.kind
        self.lines.append(f"# {kind}: {', '.join(n.op.removeprefix('aten.') for n in group.nodes)}")
        for out in group.outputs:
            self.alloc(out)
        rank = writer.stride_rank
        ptrs = [p.value for p in writer.params]
        strides = []
        for p in writer.params:
            if kind == "gemm":
                strides.append(f"*broadcast_strides({p.value}, {writer.param_rank(p)}, -1)")
                continue
            squeezed = group.k if p.squeezed else -1
            strides.append(f"*broadcast_strides({p.value}, {rank}, {squeezed})")
        if kind == "gemm" and group.split is not None:
            ptrs += [self.size(s) for s in group.split[:-1]]
        if kind in ("pointwise", "flat"):
            sizes = [self.size(s) for s in group.domain]
            self.lines.append(f"_sizes = [{', '.join(sizes)}]")
            self.lines.append("_numel = " + (" * ".join(f"_sizes[{d}]" for d in range(len(sizes))) or "1"))
            if kind == "pointwise":
                block, warps = variant.pw_block, variant.pw_warps
                grid = f"(triton.cdiv(_numel, {block}),)"
            else:
                block, warps = variant.flat_block, variant.flat_warps
                grid = "(1,)"
            args = [*ptrs, "_numel", *[f"_sizes[{d}]" for d in range(len(sizes))], *strides]
            self.launch(writer.name, grid, args, f"BLOCK={block}, num_warps={warps}")
        elif kind == "row":
            sizes = [self.size(s) for s in group.domain]
            self.lines.append(f"_sizes = [{', '.join(sizes)}]")
            rows = " * ".join(f"_sizes[{d}]" for d in range(len(sizes)) if d != group.k) or "1"
            self.lines.append(f"_rows = {rows}")
            self.lines.append(f"_block_n = triton.next_power_of_2(_sizes[{group.k}])")
            self.lines.append(
                f"_per_program = max(1, min({variant.row_rows}, {variant.row_elems} // _block_n))"
            )
            args = ["_rows", f"_sizes[{group.k}]", *[f"_sizes[{d}]" for d in range(len(sizes))], *strides]
            tune = f"BLOCK_N=_block_n, ROWS=_per_program, num_warps={variant.row_warps}"
            self.launch(writer.name, "(triton.cdiv(_rows, _per_program),)", [*ptrs, *args], tune)
        elif kind == "gemm":
            self.gemm_launch(group, writer, variant, ptrs, strides)
        else:
            raise LoweringError(f"no launcher for group kind {kind}")

    def gemm_launch(
        self, group: Group, writer: KernelWriter, variant: Variant, ptrs: list[str], strides: list[str]
    ) -> None:
        head = group.nodes[0]
        name = base_name(head.op)
        a, b = (head.args[1], head.args[2]) if name == "addmm" else (head.args[0], head.args[1])
        av, bv = self.py(a), self.py(b)
        a_meta, b_meta = self.meta[refs(a)[0]], self.meta[refs(b)[0]]
        assert a_meta is not None and b_meta is not None
        if name == "bmm":
            self.lines.append(f"_batch, _m, _k = {av}.shape")
            self.lines.append(f"_n = {bv}.shape[2]")
            a_strides = f"{av}.stride(0), {av}.stride(1), {av}.stride(2)"
            b_strides = f"{bv}.stride(0), {bv}.stride(1), {bv}.stride(2)"
        else:
            self.lines.append("_batch = 1")
            self.lines.append(f"_m, _k = {av}.shape")
            self.lines.append(f"_n = {bv}.shape[1]")
            a_strides = f"0, {av}.stride(0), {av}.stride(1)"
            b_strides = f"0, {bv}.stride(0), {bv}.stride(1)"
        bm, bn, bk, gm, warps, stages = variant.gemm
        grid = f"(triton.cdiv(_m, {bm}) * triton.cdiv(_n, {bn}) * _batch,)"
        ieee = a_meta.dtype == "float32" or b_meta.dtype == "float32"
        args = [av, bv, *ptrs, "_m", "_n", "_k", a_strides, b_strides, *strides]
        tune = (
            f"BLOCK_M={bm}, BLOCK_N={bn}, BLOCK_K={bk}, GROUP_M={gm}, IEEE={ieee}, "
            f"num_warps={warps}, num_stages={stages}"
        )
        self.launch(writer.name, grid, args, tune)

    def launch(self, kernel: str, grid: str, args: list[str], tune: str) -> None:
        self.lines.append(f"{kernel}[{grid}](")
        self.lines.append("    " + ", ".join(args) + ",")
        self.lines.append(f"    {tune},")
        self.lines.append(")")

    def returns(self) -> None:
        outs = [self.py(o) for o in self.graph.outputs]
        if self.graph.output_is_tuple or len(outs) != 1:
            self.lines.append(f"return ({', '.join(outs)}{',' if len(outs) == 1 else ''})")
        else:
            self.lines.append(f"return {outs[0]}")


HEADER = '''"""{doc}"""

import torch
import torch.nn as nn
import triton
import triton.language as tl
'''


def _lower_graph(
    graph: OpGraph, variant: Variant, kernels: list[str], used_sparse: set[str], summary: list[str]
) -> list[str]:
    """Append this graph's kernels to ``kernels``; return its launcher lines."""
    graph = rewrite(graph)
    partitioner = Partitioner(graph)
    steps = partitioner.run()
    launcher = Launcher(graph)
    launcher.bind_inputs(graph.forward_params)
    if launcher.device is None:
        raise LoweringError("the model has no tensor input or parameter to take a device from")
    constants = partitioner.constants
    for step in steps:
        if step.node is not None:
            if step.node.sym is not None or step.node.op.startswith("operator."):
                launcher.sym_node(step.node)
            else:
                launcher.view_node(step.node)
            continue
        group = step.group
        assert group is not None
        if any(o in constants for o in group.outputs):
            raise LoweringError("a constant is a group output")
        if group.kind == "sparse":
            node = group.nodes[0]
            sample, source = SPARSE_KERNELS[base_name(node.op)]
            if sample not in used_sparse:
                kernels.append(source)
                used_sparse.add(sample)
            launcher.lines += sparse_launch(node, group, launcher, variant)
            summary.append(sample)
            continue
        writer = KernelWriter(group, len(kernels), launcher.meta, constants, variant)
        kernels.append(writer.render())
        launcher.group_launch(group, writer, variant)
        summary.append(group.kind)
    for out in refs(graph.outputs):
        if out in constants:
            raise LoweringError("a constant is a graph output")
    launcher.returns()
    return launcher.lines


def _rank_condition(graph: OpGraph) -> str:
    terms = []
    for inp in graph.inputs:
        if inp.kind == "user_input" and inp.meta is not None and isinstance(inp.target, int):
            arg = graph.forward_params[inp.target]
            terms.append(f"{arg}.dim() == {len(inp.meta.shape)} and {arg}.dtype == torch.{inp.meta.dtype}")
    return " and ".join(terms) or "True"


def lower(
    graph: OpGraph,
    problem_source: str,
    variant: Variant,
    *,
    problem_name: str = "problem",
    init: str = "copy",
) -> str:
    """The complete candidate source for ``graph`` (and its other-rank/dtype captures, dispatched
    on the inputs); raises LoweringError when a node is outside the library.

    ``init="copy"`` copies Model.__init__; ``"skeleton"`` only allocates the same parameters and
    buffers (for constructors that compute on tensors, which the static check forbids)."""
    parts = model_parts(problem_source)
    if init == "skeleton":
        tensors = [
            (i.kind, str(i.target), list(i.meta.shape), i.meta.dtype, i.persistent)
            for i in graph.inputs
            if i.kind in ("parameter", "buffer") and i.meta is not None
        ]
        parts.init, parts.prelude = skeleton_init(problem_source, tensors), ""
    kernels: list[str] = []
    used_sparse: set[str] = set()
    summary: list[str] = []
    branches: list[tuple[str, list[str]]] = []
    for alt in graph.alternates:
        branches.append((_rank_condition(alt), _lower_graph(alt, variant, kernels, used_sparse, [])))
    main_lines = _lower_graph(graph, variant, kernels, used_sparse, summary)
    doc = (
        f"Generated by kernelevolve's template operator from {problem_name} (variant {variant.name}).\n\n"
        f"Kernels: {', '.join(summary) or 'none'}; built from knowledge/code_samples templates.\n"
    )
    if branches:
        doc += (
            "Inputs of other ranks or dtypes (from get_test_inputs) dispatch to kernels lowered for them.\n"
        )
    helper = function_source("launch_helpers", "broadcast_strides")
    pieces = [HEADER.format(doc=doc)]
    if parts.prelude:
        pieces.append(parts.prelude + "\n")
    pieces.append("\n" + helper)
    pieces += ["\n" + k for k in kernels]
    body: list[str] = []
    for condition, lines in branches:
        body.append(f"        if {condition}:")
        body += ["            " + ln for ln in lines]
    body += ["        " + ln for ln in main_lines]
    init = ("\n" + parts.init.rstrip() + "\n") if parts.init else ""
    pieces.append(
        f"\nclass ModelNew(nn.Module):{init}\n    def forward(self, {parts.forward_args}):\n"
        + "\n".join(body)
        + "\n"
    )
    return "\n".join(pieces)
