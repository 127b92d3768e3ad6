"""Split a captured ATen graph into launcher steps and fusion groups, one Triton kernel per group.

Walks the nodes in order with one open group at a time:

- ``pointwise``: elementwise nodes of one output shape S, one flat kernel over S;
- ``row``: reductions over one dim k of a shape F (sum, mean, max, argmax, softmax, layer_norm,
  gather...) with the pointwise nodes before and after them, one program per row;
- ``flat``: reductions of a whole tensor to a scalar (losses) with their pointwise prologue (in the
  loop) and scalar epilogue (after it), one program;
- ``gemm``: mm/bmm/addmm with the pointwise nodes on its output fused into the tile store;
- ``sparse``: one embedding-bag / embedding / jagged node, a library kernel as it is.

Views, symbolic sizes and tuple picks are launcher steps (plain Python on the host). A view of a
value still inside the open group closes it, so every value crossing a group boundary is stored.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kernelevolve.search.capture import GraphNode, OpGraph, TensorMeta
from kernelevolve.search.lowering.pointwise_ops import LoweringError, base_name, is_pointwise

VIEW_OPS = {
    "view",
    "_unsafe_view",
    "reshape",
    "permute",
    "t",
    "transpose",
    "expand",
    "unsqueeze",
    "squeeze",
    "slice",
    "select",
    "alias",
    "detach",
}
ROW_OPS = {"max", "min", "argmax", "argmin", "var", "_softmax", "_log_softmax", "native_layer_norm", "gather"}
DIM_REDUCTIONS = {"sum", "mean", "amax", "amin", "linalg_vector_norm"}
GEMM_OPS = {"mm", "bmm", "addmm"}
SPARSE_OPS = {
    "_embedding_bag",
    "_embedding_bag_forward_only",
    "embedding",
    "_jagged_to_padded_dense_forward",
    "_padded_dense_to_jagged_forward",
    "cat",
}
CONSTANT_OPS = {"scalar_tensor", "full"}
NOOP_OPS = {
    "_assert_tensor_metadata",
    "_assert_async",
    "_assert_scalar",
    "sym_constrain_range",
    "sym_constrain_range_for_size",
}


def refs(value: Any) -> list[str]:
    """Names of the nodes/inputs an encoded argument refers to."""
    if isinstance(value, dict):
        if "ref" in value:
            return [value["ref"]]
        return [r for v in value.values() for r in refs(v)]
    if isinstance(value, list):
        return [r for v in value for r in refs(v)]
    return []


def norm_dim(dim: int, rank: int) -> int:
    return dim % rank if rank else 0


@dataclass
class Member:
    """A value inside a group: its canonical rank-R shape and whether its actual tensor lacks dim k
    (row groups) or lives in the M-split view of the output (gemm groups, ``Group.split``)."""

    canon: list[int | str]
    squeezed: bool = False
    scalar_stage: bool = False  # flat groups: known only after the loop (a reduction or its epilogue)


@dataclass
class Group:
    kind: str  # "pointwise", "row", "flat", "gemm", "sparse"
    domain: list[int | str]
    k: int = -1  # reduced dim of a row group
    split: list[int | str] | None = None  # gemm: the output viewed with M split into leading dims
    nodes: list[GraphNode] = field(default_factory=list)
    members: dict[str, Member] = field(default_factory=dict)
    aliases: dict[str, tuple[str, int]] = field(default_factory=dict)  # getitem name -> (node, index)
    outputs: list[str] = field(default_factory=list)  # filled after partitioning

    @property
    def rank(self) -> int:
        return len(self.domain)


@dataclass
class Step:
    """One launcher statement source (``node``) or one kernel launch (``group``)."""

    node: GraphNode | None = None
    group: Group | None = None


def reduction_kind(node: GraphNode, graph_meta: dict[str, TensorMeta | None]) -> tuple[str, int] | None:
    """("row", k) or ("flat", -1) for a reduction node; None when the node is no reduction."""
    name = base_name(node.op)
    if name not in DIM_REDUCTIONS | ROW_OPS:
        return None
    src = graph_meta.get(refs(node.args[0])[0]) if node.args and refs(node.args[0]) else None
    if src is None:
        raise LoweringError(f"{node.op}: input is not a tensor")
    rank = len(src.sym_shape)
    if name in DIM_REDUCTIONS:
        dims = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim")
        if name == "linalg_vector_norm":
            dims = node.args[2] if len(node.args) > 2 else node.kwargs.get("dim")
        if node.op.endswith(".default") and name in ("sum", "mean"):
            dims = None
        if isinstance(dims, int):
            dims = [dims]
        if not dims or len({norm_dim(d, rank) for d in dims}) == rank:
            return ("flat", -1)
        if len(dims) == 1:
            return ("row", norm_dim(dims[0], rank))
        raise LoweringError(f"{node.op}: reduction over several (not all) dims {dims}")
    if name in ("max", "min") and node.op.endswith(".default"):
        return ("flat", -1)
    if name in ("max", "min", "argmax", "argmin", "_softmax", "_log_softmax", "gather"):
        dim = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim")
        if dim is None:
            raise LoweringError(f"{node.op}: reduction over all dims is not covered")
        return ("row", norm_dim(int(dim), rank))
    if name == "var":
        dims = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim")
        if not isinstance(dims, list) or len(dims) != 1:
            raise LoweringError(f"{node.op}: variance over several dims is not covered")
        return ("row", norm_dim(dims[0], rank))
    if name == "native_layer_norm":
        if len(node.args[1]) != 1:
            raise LoweringError(f"{node.op}: layer_norm over several dims is not covered")
        return ("row", rank - 1)
    return None


def classify(node: GraphNode, graph_meta: dict[str, TensorMeta | None]) -> str:
    """sym, view, getitem, constant, pointwise, row, flat, gemm, sparse; or LoweringError."""
    if node.sym is not None or node.op.startswith("operator.") and node.op != "operator.getitem":
        return "sym"
    if node.op == "operator.getitem":
        return "getitem"
    if node.op == "aten.sym_size.int":
        return "sym"
    name = base_name(node.op)
    if name in NOOP_OPS:
        return "noop"
    if name in VIEW_OPS:
        return "view"
    if name in CONSTANT_OPS and not refs(node.args) and node.meta is not None and not node.meta.shape:
        return "constant"
    if name in ("zeros_like", "ones_like", "full_like") and is_pointwise(node.op):
        return "pointwise"
    if is_pointwise(node.op):
        return "pointwise"
    red = reduction_kind(node, graph_meta)
    if red is not None:
        return red[0]
    if name in GEMM_OPS:
        return "gemm"
    if name in SPARSE_OPS:
        return "sparse"
    if name == "triu_indices" and len(node.args) >= 3 and node.args[0] == node.args[1] and node.args[2] == 1:
        return "triu"
    if name == "index":
        return "index"
    raise LoweringError(f"{node.op}: no template covers this op")


def uncovered_ops(graph: OpGraph) -> list[str]:
    """Ops of the graph that the library cannot lower, each once, in graph order."""
    from kernelevolve.search.lowering.rewrite import rewrite

    try:
        graph = rewrite(graph)
    except LoweringError as exc:
        return [str(exc).split(":")[0]]
    meta = graph_meta(graph)
    bad: list[str] = []
    for node in graph.nodes:
        try:
            classify(node, meta)
        except LoweringError:
            if node.op not in bad:
                bad.append(node.op)
    for inp in graph.inputs:
        if inp.kind == "constant":
            bad.append(f"constant tensor created in forward ({inp.target})")
    return bad


def graph_meta(graph: OpGraph) -> dict[str, TensorMeta | None]:
    meta: dict[str, TensorMeta | None] = {i.name: i.meta for i in graph.inputs}
    for node in graph.nodes:
        meta[node.name] = node.meta
    return meta


def _fits(canon: list[int | str], domain: list[int | str]) -> bool:
    return len(canon) == len(domain) and all(c in (1, d) for c, d in zip(canon, domain, strict=True))


class Partitioner:
    def __init__(self, graph: OpGraph) -> None:
        self.graph = graph
        self.meta = graph_meta(graph)
        self.steps: list[Step] = []
        self.group: Group | None = None
        self.constants: dict[str, GraphNode] = {}
        self.owner: dict[str, Group] = {}  # value name -> group that computes it
        # triu_indices(n, n, 1) and its rows: never materialised, only read by a triangle pack
        self.virtual: dict[str, tuple[str, int | None]] = {}

    # -- group bookkeeping -------------------------------------------------------------------
    def close(self) -> None:
        if self.group is not None and self.group.nodes:
            self.steps.append(Step(group=self.group))
        self.group = None

    def open(self, kind: str, domain: list[int | str], k: int = -1) -> Group:
        self.close()
        self.group = Group(kind=kind, domain=list(domain), k=k)
        return self.group

    def in_group(self, name: str) -> bool:
        return self.group is not None and name in self.group.members

    def add(self, node: GraphNode, member: Member) -> None:
        assert self.group is not None
        self.group.nodes.append(node)
        self.group.members[node.name] = member
        self.owner[node.name] = self.group

    def tensor_refs(self, node: GraphNode) -> list[str]:
        return [r for r in refs(node.args) + refs(node.kwargs) if r not in self.constants]

    # -- the walk ----------------------------------------------------------------------------
    def run(self) -> list[Step]:
        for node in self.graph.nodes:
            kind = classify(node, self.meta)
            if kind == "noop":
                continue
            if kind == "triu":
                self.virtual[node.name] = (node.name, None)
                continue
            if kind == "index":
                self.index(node)
                continue
            if kind == "constant":
                self.constants[node.name] = node
            elif kind == "sym":
                self.steps.append(Step(node=node))
            elif kind == "getitem":
                self.getitem(node)
            elif kind == "view":
                self.view(node)
            elif kind == "pointwise":
                self.pointwise(node)
            elif kind == "row":
                self.row(node)
            elif kind == "flat":
                self.flat(node)
            elif kind == "gemm":
                self.gemm(node)
            else:
                self.close()
                self.open("sparse", [], -1)
                self.add(node, Member([]))
                self.close()
        leaked = [
            r
            for n in self.graph.nodes
            for r in refs(n.args)
            if r in self.virtual and base_name(n.op) != "index"
        ]
        leaked += [r for r in refs(self.graph.outputs) if r in self.virtual]
        if any(not self.virtual_use_ok(r) for r in leaked):
            raise LoweringError("aten.triu_indices.default: its values are used outside a triangle gather")
        self.close()
        self.mark_outputs()
        return self.steps

    def virtual_use_ok(self, name: str) -> bool:
        """A triu value may only feed the row picks (slice/select/squeeze) that lead to an index."""
        users = [n for n in self.graph.nodes if name in refs(n.args)]
        return (
            bool(users)
            and all(u.name in self.virtual for u in users)
            and name not in refs(self.graph.outputs)
        )

    def getitem(self, node: GraphNode) -> None:
        src, index = refs(node.args[0])[0], int(node.args[1])
        if self.in_group(src):
            assert self.group is not None and node.meta is not None
            parent = self.group.members[src]
            sym = node.meta.sym_shape
            squeezed = self.group.kind == "row" and len(sym) == self.group.rank - 1
            canon = _canon(sym, self.group.rank, self.group.k if squeezed else -1)
            self.group.aliases[node.name] = (src, index)
            self.group.members[node.name] = Member(canon, squeezed, parent.scalar_stage)
            self.owner[node.name] = self.group
            return
        owner = self.owner.get(src)
        if owner is not None and owner.kind == "sparse":
            if index != 0:
                raise LoweringError(f"{owner.nodes[0].op}: only its first output is covered")
            owner.aliases[node.name] = (src, index)
            owner.members[node.name] = Member([])
            self.owner[node.name] = owner
            return
        raise LoweringError(f"{node.op}: tuple output of an op outside any group")

    def index(self, node: GraphNode) -> None:
        """z[:, li, lj] with (li, lj) = triu_indices(n, n, 1): DLRM's triangle gather."""
        src_refs = refs(node.args[0])
        idx = node.args[1] if len(node.args) > 1 else None
        picks: list[Any] = idx[1:] if isinstance(idx, list) and len(idx) == 3 and idx[0] is None else []
        rows = [self.virtual.get(refs(i)[0]) if refs(i) else None for i in picks]
        if (
            len(rows) != 2
            or len(src_refs) != 1
            or rows[0] is None
            or rows[1] is None
            or rows[0][0] != rows[1][0]
            or (rows[0][1], rows[1][1]) != (0, 1)
        ):
            raise LoweringError(
                f"{node.op}: only z[:, li, lj] with (li, lj) = triu_indices(n, n, 1) is covered"
            )
        triu = next(n for n in self.graph.nodes if n.name == rows[0][0])
        if any(self.in_group(r) for r in src_refs):
            self.close()
        self.open("sparse", [int(triu.args[0])], -1)
        self.add(node, Member([]))
        self.close()

    def view(self, node: GraphNode) -> None:
        src = refs(node.args[0])[0] if refs(node.args[0]) else None
        if src is not None and src in self.virtual:
            self.virtual_view(node, src)
            return
        if src is not None and self.gemm_split_view(node, src):
            return
        g = self.group
        if src is not None and g is not None and src in g.members and g.kind == "row" and node.meta:
            name, member = base_name(node.op), g.members[src]
            dims = node.args[1] if len(node.args) > 1 else None
            dim_list = [] if dims is None else (dims if isinstance(dims, list) else [dims])
            if (
                name == "unsqueeze"
                and member.squeezed
                and isinstance(dims, int)
                and norm_dim(dims, g.rank) == g.k
            ):
                self.alias(node, Member(member.canon, False))
                return
            if (
                name == "squeeze"
                and not member.squeezed
                and len(node.meta.sym_shape) == g.rank - 1
                and member.canon[g.k] == 1
                and [norm_dim(int(d), g.rank) for d in dim_list] == [g.k]
            ):
                self.alias(node, Member(member.canon, True))
                return
        if src is not None and self.in_group(src):
            self.close()
        self.steps.append(Step(node=node))

    def gemm_split_view(self, node: GraphNode, src: str) -> bool:
        """A reshape of an (M, N) GEMM value to (..., N) stays in the group: the epilogue indexes
        the split rows (3-D nn.Linear: view -> addmm -> view -> activation)."""
        g = self.group
        if g is None or g.kind != "gemm" or src not in g.members or g.members[src].squeezed:
            return False
        if base_name(node.op) not in ("view", "_unsafe_view", "reshape") or node.meta is None:
            return False
        sym = list(node.meta.sym_shape)
        if len(g.domain) != 2 or len(sym) < 2 or sym[-1] != g.domain[-1] or g.split not in (None, sym):
            return False
        g.split = sym
        self.alias(node, Member(sym, squeezed=True))
        return True

    def virtual_view(self, node: GraphNode, src: str) -> None:
        triu, row = self.virtual[src]
        name, a = base_name(node.op), node.args
        if (
            name == "slice"
            and row is None
            and a[1] == 0
            and isinstance(a[2], int)
            and a[3] == a[2] + 1
            or name == "select"
            and row is None
            and a[1] == 0
            and isinstance(a[2], int)
        ):
            self.virtual[node.name] = (triu, a[2])
        elif name == "squeeze" and row is not None:
            self.virtual[node.name] = (triu, row)
        else:
            raise LoweringError(f"{node.op} of triu_indices: only row picks feeding an index are covered")

    def alias(self, node: GraphNode, member: Member) -> None:
        assert self.group is not None
        self.group.aliases[node.name] = (refs(node.args[0])[0], -1)
        self.group.members[node.name] = member
        self.owner[node.name] = self.group

    def pointwise(self, node: GraphNode) -> None:
        meta = node.meta
        if meta is None:
            raise LoweringError(f"{node.op}: no tensor output")
        sym = meta.sym_shape
        inside = [r for r in self.tensor_refs(node) if self.in_group(r)]
        g = self.group
        if g is not None:
            member = self.join_pointwise(g, sym, inside)
            if member is not None:
                self.add(node, member)
                return
        self.open("pointwise", sym)
        self.add(node, Member(list(sym)))

    def join_pointwise(self, g: Group, sym: list[int | str], inside: list[str]) -> Member | None:
        if g.kind == "gemm" and g.split is not None and list(sym) == g.split and inside:
            if all(g.members[r].squeezed for r in inside):
                return Member(list(sym), squeezed=True)
            return None
        if g.kind in ("pointwise", "gemm"):
            if list(sym) == g.domain and (inside or g.kind == "pointwise"):
                if g.kind == "gemm" and any(g.members[r].squeezed for r in inside):
                    return None
                return Member(list(sym))
            return None
        if g.kind == "row":
            squeezed = [g.members[r].squeezed for r in inside]
            if any(squeezed):
                if not all(squeezed) or len(sym) != g.rank - 1:
                    return None
                canon = _canon(sym, g.rank, g.k)
                return Member(canon, True) if _fits(canon, g.domain) else None
            if len(sym) > g.rank or (not inside and list(sym) != g.domain):
                return None
            canon = _canon(sym, g.rank, -1)
            return Member(canon) if _fits(canon, g.domain) else None
        if g.kind == "flat":
            stages = {g.members[r].scalar_stage for r in inside}
            if True in stages:
                return (
                    Member([], scalar_stage=True)
                    if all(d == 1 for d in sym) and False not in stages
                    else None
                )
            if list(sym) == g.domain:
                return Member(list(sym))
            return None
        return None

    def row(self, node: GraphNode) -> None:
        meta = self.meta
        red = reduction_kind(node, meta)
        assert red is not None
        k = red[1]
        src = refs(node.args[0])[0]
        src_meta = meta[src]
        assert src_meta is not None
        domain = list(src_meta.sym_shape)
        g = self.group
        joinable = g is not None and (
            (g.kind == "row" and g.domain == domain and g.k == k)
            or (g.kind == "pointwise" and g.domain == domain)
        )
        if src in (g.members if g is not None else {}) and g is not None and g.members[src].squeezed:
            joinable = False
        if base_name(node.op) == "gather":
            idx_meta = meta[refs(node.args[2])[0]]
            if idx_meta is None or idx_meta.sym_shape[k] != 1:
                raise LoweringError(f"{node.op}: gather of more than one element per row is not covered")
            if any(
                self.in_group(r) and self.group and self.group.members[r].squeezed for r in refs(node.args[2])
            ):
                joinable = False
        if not joinable:
            g = self.open("row", domain, k)
        assert g is not None
        if g.kind == "pointwise":  # every member so far has the full domain shape
            g.kind, g.k = "row", k
        self.add(node, self.row_output_canon(node, domain, k))

    def row_output_canon(self, node: GraphNode, domain: list[int | str], k: int) -> Member:
        sym = node.meta.sym_shape if node.meta is not None else None
        if sym is not None and len(sym) == len(domain) and sym[k] != 1:
            return Member(list(domain))  # softmax-like: a full row out
        canon = list(domain)
        canon[k] = 1
        return Member(canon, squeezed=sym is not None and len(sym) == len(domain) - 1)

    def flat(self, node: GraphNode) -> None:
        src = refs(node.args[0])[0]
        src_meta = self.meta[src]
        assert src_meta is not None
        domain = list(src_meta.sym_shape)
        g = self.group
        ok = g is not None and g.kind in ("flat", "pointwise") and g.domain == domain
        if ok and g is not None and src in g.members and g.members[src].scalar_stage:
            ok = False
        if not ok:
            g = self.open("flat", domain)
        assert g is not None
        g.kind = "flat"
        self.add(node, Member([], scalar_stage=True))

    def gemm(self, node: GraphNode) -> None:
        if node.meta is None:
            raise LoweringError(f"{node.op}: no tensor output")
        if any(self.in_group(r) for r in self.tensor_refs(node)):
            self.close()
        self.open("gemm", node.meta.sym_shape)
        self.add(node, Member(list(node.meta.sym_shape)))

    def mark_outputs(self) -> None:
        users: dict[str, set[int]] = {}
        group_of_node: dict[str, int] = {}
        groups = [s.group for s in self.steps if s.group is not None]
        for gi, g in enumerate(groups):
            for name in g.members:
                group_of_node[name] = gi
        for node in self.graph.nodes:
            gi = group_of_node.get(node.name, -1)
            for r in refs(node.args) + refs(node.kwargs):
                if gi == -1 or group_of_node.get(r, -2) != gi:
                    users.setdefault(r, set()).add(gi)
        graph_outputs = set(refs(self.graph.outputs))
        for g in groups:
            g.outputs = [
                name
                for name in g.members
                if (name in users or name in graph_outputs) and _is_value(g, name, self.meta)
            ]


def _is_value(g: Group, name: str, meta: dict[str, TensorMeta | None]) -> bool:
    """Tuple-producing nodes are not values themselves; their getitem aliases are."""
    return meta.get(name) is not None


def _canon(sym: list[int | str], rank: int, squeezed_k: int) -> list[int | str]:
    if squeezed_k >= 0:
        padded: list[int | str] = [1] * (rank - 1 - len(sym))
        padded += sym
        padded.insert(squeezed_k, 1)
        return padded
    full: list[int | str] = [1] * (rank - len(sym))
    return full + list(sym)
