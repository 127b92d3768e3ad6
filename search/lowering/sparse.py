"""Recommendation-model sparse ops: library kernels used as they are, with generated launches."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kernelevolve.knowledge.templates import function_source
from kernelevolve.search.capture import GraphNode
from kernelevolve.search.lowering.partition import Group, base_name
from kernelevolve.search.lowering.pointwise_ops import LoweringError
from kernelevolve.search.lowering.variants import Variant

if TYPE_CHECKING:
    from kernelevolve.search.lowering.lower import Launcher

SPARSE_KERNELS: dict[str, tuple[str, str]] = {
    "_embedding_bag": ("embedding_bag", function_source("embedding_bag", "embedding_bag_kernel")),
    "_embedding_bag_forward_only": (
        "embedding_bag",
        function_source("embedding_bag", "embedding_bag_kernel"),
    ),
    "embedding": ("embedding", function_source("embedding", "embedding_kernel")),
    "_padded_dense_to_jagged_forward": (
        "padded_to_jagged",
        function_source("jagged_to_padded_dense", "padded_to_jagged_kernel"),
    ),
    "cat": ("cat_copy", function_source("dot_interaction", "cat_copy_kernel")),
    "index": ("triu_pack", function_source("dot_interaction", "triu_pack_kernel")),
    "_jagged_to_padded_dense_forward": (
        "jagged_to_padded_dense",
        function_source("jagged_to_padded_dense", "jagged_to_padded_kernel"),
    ),
}


def _arg(node: GraphNode, index: int, name: str, default: object) -> object:
    if len(node.args) > index:
        return node.args[index]
    return node.kwargs.get(name, default)


def sparse_launch(node: GraphNode, group: Group, launcher: Launcher, variant: Variant) -> list[str]:
    name = base_name(node.op)
    if not group.outputs:
        return []
    out = group.outputs[0]
    launcher.alloc(out)
    o = f"v_{out}"
    py = launcher.py
    bd, warps = variant.sparse_block_d, variant.sparse_warps
    if name in ("_embedding_bag", "_embedding_bag_forward_only"):
        w, idx, off = (py(a) for a in node.args[:3])
        mode = _arg(node, 4, "mode", 0)
        psw = _arg(node, 6, "per_sample_weights", None)
        last = bool(_arg(node, 7, "include_last_offset", False))
        pad = _arg(node, 8, "padding_idx", -1)
        pad = -1 if pad is None else pad
        if mode not in (0, 1, 2) or (psw is not None and mode != 0):
            raise LoweringError(f"{node.op}: mode {mode} with these weights is not covered")
        psw_v = py(psw) if psw is not None else w
        return [
            f"_bags = {o}.shape[0]",
            f"_dim = {w}.shape[1]",
            f"embedding_bag_kernel[(_bags, triton.cdiv(_dim, {bd}))](",
            f"    {w}, {idx}, {off}, {psw_v}, {o}, {idx}.shape[0], {off}.shape[0], _dim,",
            f"    {w}.stride(0), {w}.stride(1), {o}.stride(0), {o}.stride(1), {pad},",
            f"    MODE={mode}, HAS_PSW={psw is not None}, INCLUDE_LAST={last}, BLOCK_D={bd}, num_warps={warps},",
            ")",
        ]
    if name == "embedding":
        w, idx = py(node.args[0]), py(node.args[1])
        return [
            f"_idx = {idx}.reshape(-1)",
            f"_dim = {w}.shape[1]",
            f"embedding_kernel[(triton.cdiv(_idx.shape[0], 16), triton.cdiv(_dim, {bd}))](",
            f"    {w}, _idx, {o}, _idx.shape[0], _dim, {w}.stride(0), {w}.stride(1),",
            f"    BLOCK_R=16, BLOCK_D={bd}, num_warps={warps},",
            ")",
        ]
    if name == "_jagged_to_padded_dense_forward":
        values = py(node.args[0])
        offsets = node.args[1]
        if not isinstance(offsets, list) or len(offsets) != 1:
            raise LoweringError(f"{node.op}: only one jagged dimension is covered")
        off = py(offsets[0])
        pad = _arg(node, 3, "padding_value", 0.0)
        return [
            f"_segs = {o}.shape[0]",
            f"_max_len = {o}.shape[1]",
            f"_dim = {o}.shape[2]",
            f"jagged_to_padded_kernel[(_segs, triton.cdiv(_max_len, 16), triton.cdiv(_dim, {bd}))](",
            f"    {values}, {off}, {o}, _max_len, _dim, {values}.stride(0), {values}.stride(1), {py(pad)},",
            f"    BLOCK_J=16, BLOCK_D={bd}, num_warps={warps},",
            ")",
        ]
    if name == "_padded_dense_to_jagged_forward":
        dense = py(node.args[0])
        offsets = node.args[1]
        if not isinstance(offsets, list) or len(offsets) != 1:
            raise LoweringError(f"{node.op}: only one jagged dimension is covered")
        off = py(offsets[0])
        return [
            f"_segs, _max_len, _dim = {dense}.shape",
            f"padded_to_jagged_kernel[(_segs, triton.cdiv(_max_len, 16), triton.cdiv(_dim, {bd}))](",
            f"    {dense}, {off}, {o}, _max_len, _dim, {dense}.stride(0), {dense}.stride(1), {dense}.stride(2),",
            f"    BLOCK_J=16, BLOCK_D={bd}, num_warps={warps},",
            ")",
        ]
    if name == "index":
        z = py(node.args[0])
        n = group.domain[0]
        return [
            f"_batch = {z}.shape[0]",
            f"triu_pack_kernel[(_batch, {n})](",
            f"    {z}, {o}, {n}, {z}.stride(0), {z}.stride(1), {z}.stride(2), {o}.stride(0), {o}.stride(1),",
            f"    BLOCK={triton_pow2(int(n))}, num_warps=1,",
            ")",
        ]
    if name == "cat":
        pieces = node.args[0]
        meta = launcher.meta[node.name]
        assert meta is not None
        dim = int(node.args[1]) % len(meta.shape) if len(node.args) > 1 else 0
        outer = " * ".join(f"{o}.shape[{d}]" for d in range(dim)) or "1"
        lines = [f"_outer = {outer}", f"_dst = {o}.view(_outer, -1)", "_offset = 0"]
        for piece in pieces:
            p = py(piece)
            lines += [
                f"_src = {p}.view(_outer, -1)",
                f"cat_copy_kernel[(_outer, triton.cdiv(_src.shape[1], {variant.pw_block}))](",
                "    _src, _dst, _src.shape[1], _src.stride(0), _dst.stride(0), _offset,",
                f"    BLOCK={variant.pw_block}, num_warps={variant.pw_warps},",
                ")",
                "_offset = _offset + _src.shape[1]",
            ]
        return lines
    raise LoweringError(f"{node.op}: no sparse template")


def triton_pow2(n: int) -> int:
    p = 1
    while p < n:
        p *= 2
    return p
