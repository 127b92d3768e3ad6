"""Graph rewrites before partitioning: composite ATen ops restated as nodes the library covers.

``_native_batch_norm_legit_no_training`` (BatchNorm in eval mode) becomes views of its per-channel
tensors to (C, 1, ..., 1) plus one pointwise ``batch_norm_eval`` node, so it fuses with what
surrounds it like any elementwise op.
"""

from __future__ import annotations

import dataclasses

from kernelevolve.search.capture import GraphNode, OpGraph, TensorMeta
from kernelevolve.search.lowering.pointwise_ops import LoweringError, base_name


def _refs_to(graph: OpGraph, name: str) -> list[GraphNode]:
    from kernelevolve.search.lowering.partition import refs

    return [n for n in graph.nodes if name in refs(n.args) + refs(n.kwargs)]


def _channel_view(
    node: GraphNode, arg: object, meta: dict[str, TensorMeta | None], rank: int, tag: str
) -> GraphNode | None:
    if not isinstance(arg, dict) or "ref" not in arg:
        return None
    src = meta.get(arg["ref"])
    if src is None or len(src.shape) != 1:
        raise LoweringError(f"{node.op}: per-channel tensor {arg['ref']} is not 1-D")
    shape: list[int | str] = [src.sym_shape[0]] + [1] * (rank - 2)
    size = shape[0] if isinstance(shape[0], int) else {"sym": shape[0], "hint": src.shape[0]}
    out = TensorMeta([src.shape[0]] + [1] * (rank - 2), shape, src.dtype, [1] * (rank - 1))
    return GraphNode(f"{node.name}_{tag}", "aten.view.default", [arg, [size] + [1] * (rank - 2)], {}, [out])


def rewrite(graph: OpGraph) -> OpGraph:
    if not any(base_name(n.op) == "_native_batch_norm_legit_no_training" for n in graph.nodes):
        return graph
    meta: dict[str, TensorMeta | None] = {i.name: i.meta for i in graph.inputs}
    for n in graph.nodes:
        meta[n.name] = n.meta
    nodes: list[GraphNode] = []
    skip: set[str] = set()
    for node in graph.nodes:
        if node.name in skip:
            continue
        if base_name(node.op) != "_native_batch_norm_legit_no_training":
            nodes.append(node)
            continue
        x = node.args[0]
        x_meta = meta.get(x["ref"]) if isinstance(x, dict) and "ref" in x else None
        if x_meta is None or len(x_meta.shape) < 2:
            raise LoweringError(f"{node.op}: input must be (N, C, ...)")
        users = _refs_to(graph, node.name)
        if any(u.op != "operator.getitem" or u.args[1] != 0 for u in users) or len(users) != 1:
            raise LoweringError(f"{node.op}: only its normalised output is covered")
        pick = users[0]
        skip.add(pick.name)
        rank = len(x_meta.shape)
        args: list[object] = [x]
        for tag, arg in zip(("w", "b", "mean", "var"), node.args[1:5], strict=True):
            view = _channel_view(node, arg, meta, rank, tag)
            if view is not None:
                nodes.append(view)
                args.append({"ref": view.name})
            else:
                args.append(None)
        args.append(node.args[6] if len(node.args) > 6 else node.kwargs.get("eps", 1e-5))
        nodes.append(GraphNode(pick.name, "aten.batch_norm_eval.default", args, {}, list(pick.metas)))
    return dataclasses.replace(graph, nodes=nodes)
