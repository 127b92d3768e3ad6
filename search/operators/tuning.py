"""The tuning operator: mutate any Triton kernel's tunables within valid ranges.

It works on any candidate file, generated or written by hand. With ``ast`` it finds

- ``tl.constexpr`` parameters of ``@triton.jit`` functions whose value is an int literal at a
  launch site (``kernel[grid](..., BLOCK=128)``, positional too), directly or through a local
  or module-level constant (``BLOCK = 1024`` ... ``BLOCK=BLOCK``), or as the parameter's default;
- ``num_warps=`` / ``num_stages=`` at launch sites (``num_warps`` is added to a launch that
  lacks it);
- the entries of ``triton.Config({...}, num_warps=, num_stages=)`` in ``@triton.autotune``.

Only names that look tunable are touched (BLOCK*, *_SIZE, TILE*, GROUP*, SPLIT*, CHUNK*, ...);
a constexpr such as ``ACTIVATION`` or ``N_COLS`` is semantics, not a knob. Sizes move by powers
of two within [16, 8192] (and no further than the largest input dimension implies), grouping
within [1, 16], ``num_warps`` within [1, 16], ``num_stages`` within [1, 5]. Each rewrite
replaces only the bytes of the literal it changes; everything else in the file stays as it was.
"""

from __future__ import annotations

import ast
import hashlib
import math
import random
import re
import threading
from dataclasses import dataclass

from kernelevolve.search.operators.base import NodeContext, Proposal
from kernelevolve.search.problem import TensorSpec, source_hash
from kernelevolve.search.results import Stage

BLOCK_NAME = re.compile(r"BLOCK|TILE|_SIZE$|^SIZE|CHUNK|VEC|^[XYZR]BLOCK", re.IGNORECASE)
GROUP_NAME = re.compile(r"GROUP|SPLIT", re.IGNORECASE)
BLOCK_RANGE = (16, 8192)
GROUP_RANGE = (1, 16)
WARPS_RANGE = (1, 16)
STAGES_RANGE = (1, 5)
MAX_TILE_ELEMENTS = 1 << 20  # product of one launch's block sizes; past this nothing compiles well
RESOURCE_ERRORS = re.compile(r"out of resources|shared memory|OutOfResources|register|too large", re.I)


@dataclass(frozen=True)
class Site:
    """One tunable int literal in the source (or, for ``insert``, where a keyword may be added)."""

    name: str
    kind: str  # "block", "group", "num_warps", "num_stages"
    value: int
    start: int  # byte offsets of the literal in the UTF-8 source
    end: int
    where: str  # for notes: "launch of add_kernel, line 40"
    group: str  # sites sharing one launch / one Config: their block product is bounded together
    insert: str | None = None  # text to insert at ``start`` instead of replacing a literal

    def values(self, upper_block: int) -> list[int]:
        """Admissible new values, nearest first (x2 and /2, then x4 and /4, then x8 and /8)."""
        if self.kind == "num_stages":
            low, high = STAGES_RANGE
            return sorted(
                (v for v in range(low, high + 1) if v != self.value), key=lambda v: abs(v - self.value)
            )
        if self.kind == "num_warps":
            low, high = WARPS_RANGE
        elif self.kind == "group":
            low, high = GROUP_RANGE
        else:
            low = min(BLOCK_RANGE[0], self.value)
            high = max(min(BLOCK_RANGE[1], upper_block), self.value)
        options = []
        for shift in (1, 2, 3):
            for v in (self.value << shift, self.value >> shift):
                exact = v << shift == self.value or v == self.value << shift
                if low <= v <= high and exact:
                    options.append(v)
        return options


@dataclass(frozen=True)
class Move:
    changes: tuple[tuple[Site, int], ...]

    @property
    def note(self) -> str:
        parts = [f"{s.name} {s.value} -> {v} ({s.where})" for s, v in self.changes]
        return "tuning: " + "; ".join(parts)


def _is_jit(decorator: ast.expr) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    if isinstance(target, ast.Attribute):
        return target.attr == "jit"
    return isinstance(target, ast.Name) and target.id == "jit"


def _is_autotune(decorator: ast.expr) -> bool:
    if not isinstance(decorator, ast.Call):
        return False
    f = decorator.func
    return (isinstance(f, ast.Attribute) and f.attr == "autotune") or (
        isinstance(f, ast.Name) and f.id == "autotune"
    )


def _is_constexpr(annotation: ast.expr | None) -> bool:
    if isinstance(annotation, ast.Attribute):
        return annotation.attr == "constexpr"
    return isinstance(annotation, ast.Name) and annotation.id == "constexpr"


def _int_literal(node: ast.expr | None) -> int | None:
    if isinstance(node, ast.Constant) and type(node.value) is int and node.value > 0:
        return node.value
    return None


def _kind_of(name: str) -> str | None:
    if name == "num_warps":
        return "num_warps"
    if name == "num_stages":
        return "num_stages"
    if GROUP_NAME.search(name):
        return "group"
    if BLOCK_NAME.search(name):
        return "block"
    return None


def _value_literals(expr: ast.expr) -> list[ast.expr]:
    if _int_literal(expr) is not None:
        return [expr]
    if isinstance(expr, ast.IfExp):
        return _value_literals(expr.body) + _value_literals(expr.orelse)
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id in ("min", "max"):
        return [lit for arg in expr.args for lit in _value_literals(arg)]
    return []


@dataclass
class _Kernel:
    name: str
    params: list[str]
    constexprs: set[str]
    defaults: dict[str, ast.expr]
    autotuned: bool = False  # @triton.autotune sets num_warps/num_stages: never at the launch


class _Finder:
    def __init__(self, source: str) -> None:
        self.source = source
        self.data = source.encode()
        self.tree = ast.parse(source)
        self.line_starts = [0]
        for line in self.data.splitlines(keepends=True):
            self.line_starts.append(self.line_starts[-1] + len(line))
        self.sites: dict[tuple[int, int], Site] = {}
        self.kernels: dict[str, _Kernel] = {}
        self.module_consts = self._constants(self.tree.body)

    def offset(self, lineno: int, col: int) -> int:
        return self.line_starts[lineno - 1] + col

    def span(self, node: ast.expr) -> tuple[int, int]:
        assert node.end_lineno is not None and node.end_col_offset is not None
        return self.offset(node.lineno, node.col_offset), self.offset(node.end_lineno, node.end_col_offset)

    @staticmethod
    def _constants(body: list[ast.stmt]) -> dict[str, ast.expr | None]:
        """Names assigned exactly once in this body, to their value (None: assigned more often)."""
        found: dict[str, ast.expr | None] = {}
        for stmt in body:
            for node in ast.walk(stmt) if not isinstance(stmt, ast.FunctionDef | ast.ClassDef) else ():
                if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    for t in targets:
                        if isinstance(t, ast.Name):
                            value = node.value if isinstance(node, ast.Assign) and len(targets) == 1 else None
                            found[t.id] = value if t.id not in found else None
        return found

    def add(self, name: str, kind: str, node: ast.expr, where: str, group: str) -> None:
        value = _int_literal(node)
        if value is None:
            return
        start, end = self.span(node)
        self.sites.setdefault((start, end), Site(name, kind, value, start, end, where, group))

    def find(self) -> list[Site]:
        for node in ast.walk(self.tree):
            if isinstance(node, ast.FunctionDef) and any(_is_jit(d) for d in node.decorator_list):
                args = node.args.posonlyargs + node.args.args
                constexprs = {a.arg for a in args if _is_constexpr(a.annotation)}
                defaults = dict(
                    zip(
                        [a.arg for a in args][len(args) - len(node.args.defaults) :],
                        node.args.defaults,
                        strict=True,
                    )
                )
                autotuned = any(_is_autotune(d) for d in node.decorator_list)
                self.kernels[node.name] = _Kernel(
                    node.name, [a.arg for a in args], constexprs, defaults, autotuned
                )
                for dec in node.decorator_list:
                    if isinstance(dec, ast.Call) and _is_autotune(dec):
                        self._autotune(node.name, dec)
        passed: dict[str, set[str]] = {k: set() for k in self.kernels}
        for func in [n for n in ast.walk(self.tree) if isinstance(n, ast.FunctionDef)] + [self.tree]:
            body = func.body
            local = self._constants(body) if isinstance(func, ast.FunctionDef) else {}
            for node in ast.walk(func) if isinstance(func, ast.FunctionDef) else self._toplevel_calls():
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript):
                    target = node.func.value
                    if isinstance(target, ast.Name) and target.id in self.kernels:
                        passed[target.id] |= self._launch(self.kernels[target.id], node, local)
        for kernel in self.kernels.values():
            for name, default in kernel.defaults.items():
                kind = _kind_of(name)
                if name in kernel.constexprs and kind and name not in passed[kernel.name]:
                    self.add(name, kind, default, f"default of {kernel.name}", f"kernel:{kernel.name}")
        return sorted(self.sites.values(), key=lambda s: s.start)

    def _toplevel_calls(self) -> list[ast.AST]:
        nodes: list[ast.AST] = []
        for stmt in self.tree.body:
            if not isinstance(stmt, ast.FunctionDef | ast.ClassDef | ast.AsyncFunctionDef):
                nodes.extend(ast.walk(stmt))
        return nodes

    def _resolve(self, value: ast.expr, local: dict[str, ast.expr | None]) -> list[ast.expr]:
        """The int literals that decide a launch value: the literal itself, or through one
        assignment (local first, then module level), the literals in value position of
        ``A if cond else B`` and ``min(...)``/``max(...)`` (caps such as ``min(next_pow2(n), 4096)``)."""
        if isinstance(value, ast.Name):
            assigned = local[value.id] if value.id in local else self.module_consts.get(value.id)
            return _value_literals(assigned) if assigned is not None else []
        return _value_literals(value)

    def _launch(self, kernel: _Kernel, call: ast.Call, local: dict[str, ast.expr | None]) -> set[str]:
        where = f"launch of {kernel.name}, line {call.lineno}"
        group = f"launch:{call.lineno}:{call.col_offset}"
        passed: set[str] = set()
        for i, arg in enumerate(call.args):
            if i < len(kernel.params) and kernel.params[i] in kernel.constexprs:
                name = kernel.params[i]
                passed.add(name)
                kind = _kind_of(name)
                if kind is None:
                    continue
                for literal in self._resolve(arg, local):
                    self.add(name, kind, literal, where, group)
        has_warps = False
        for kw in call.keywords:
            if kw.arg is None:
                continue
            passed.add(kw.arg)
            has_warps = has_warps or kw.arg == "num_warps"
            kind = _kind_of(kw.arg)
            if kind is None or (kw.arg not in kernel.constexprs and kind not in ("num_warps", "num_stages")):
                continue
            for literal in self._resolve(kw.value, local):
                self.add(kw.arg, kind, literal, where, group)
        if (
            not kernel.autotuned and not has_warps and all(k.arg is not None for k in call.keywords)
        ):  # no **kwargs that may set it
            self._insertion(call, where, group)
        return passed

    def _insertion(self, call: ast.Call, where: str, group: str) -> None:
        """Where ``num_warps=`` can be added: before the launch's closing parenthesis."""
        _, end = self.span(call)
        close = end - 1
        if self.data[close : close + 1] != b")":
            return
        before = self.data[:close].rstrip()
        text = "num_warps=" if before.endswith((b",", b"(")) else ", num_warps="
        pos = len(before)
        self.sites.setdefault((pos, pos), Site("num_warps", "num_warps", 4, pos, pos, where, group, text))

    def _autotune(self, kernel: str, decorator: ast.Call) -> None:
        configs = next((k.value for k in decorator.keywords if k.arg == "configs"), None)
        if configs is None and decorator.args:
            configs = decorator.args[0]
        if not isinstance(configs, ast.List):
            return
        for entry in configs.elts:
            if not isinstance(entry, ast.Call):
                continue
            where = f"autotune config of {kernel}, line {entry.lineno}"
            group = f"config:{entry.lineno}:{entry.col_offset}"
            if entry.args and isinstance(entry.args[0], ast.Dict):
                for key, value in zip(entry.args[0].keys, entry.args[0].values, strict=True):
                    if isinstance(key, ast.Constant) and isinstance(key.value, str):
                        kind = _kind_of(key.value)
                        if kind in ("block", "group"):
                            self.add(key.value, kind, value, where, group)
            for kw in entry.keywords:
                if kw.arg in ("num_warps", "num_stages"):
                    self.add(kw.arg, kw.arg, kw.value, where, group)


def find_sites(source: str) -> list[Site]:
    """Every tunable site in ``source``; ``[]`` when it does not parse or has no Triton kernel."""
    try:
        return _Finder(source).find()
    except (SyntaxError, ValueError):
        return []


def apply(source: str, move: Move) -> str:
    """Rewrite ``source`` with the move's new values, touching only those literals."""
    data = source.encode()
    for site, value in sorted(move.changes, key=lambda c: c[0].start, reverse=True):
        text = f"{site.insert}{value}" if site.insert is not None else str(value)
        data = data[: site.start] + text.encode() + data[site.end :]
    return data.decode()


def _largest_input(ctx: NodeContext) -> int:
    """Elements of the largest input: no block needs to be larger than that."""
    sizes = [math.prod(spec.shape) for spec in ctx.spec.inputs if isinstance(spec, TensorSpec)]
    return max(sizes, default=BLOCK_RANGE[1])


def _next_pow2(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


def _tile_ok(sites: list[Site], move: Move) -> bool:
    new = {s.start: v for s, v in move.changes}
    for group in {s.group for s, _ in move.changes}:
        product = 1
        for s in sites:
            if s.group == group and s.kind == "block":
                product *= new.get(s.start, s.value)
        if product > MAX_TILE_ELEMENTS:
            return False
    return True


class TuningOperator:
    """Proposes children of a node that differ from it only in tunable values."""

    name = "tuning"

    def __init__(self, max_pairs: int = 64) -> None:
        self.max_pairs = max_pairs

    def moves(self, source: str, ctx: NodeContext) -> list[Move]:
        sites = find_sites(source)
        if not sites:
            return []
        upper = _next_pow2(max(_largest_input(ctx), BLOCK_RANGE[0]))
        rng = random.Random(int(hashlib.sha256(source.encode()).hexdigest()[:12], 16) + len(ctx.siblings))
        singles: list[tuple[int, Move]] = []
        for site in sites:
            for rank, value in enumerate(site.values(upper)):
                singles.append((rank, Move(((site, value),))))
        rng.shuffle(singles)
        shrink_first = self._resources_exhausted(ctx)
        singles.sort(key=lambda rm: (self._direction_rank(rm[1], shrink_first), rm[0]))
        moves = [m for _, m in singles]
        nearest = [m for rank, m in singles if rank <= 1]
        pairs: list[Move] = []
        for i, a in enumerate(nearest):
            for b in nearest[i + 1 :]:
                if a.changes[0][0] != b.changes[0][0]:
                    pairs.append(Move(a.changes + b.changes))
        rng.shuffle(pairs)
        moves += pairs[: self.max_pairs]
        return [m for m in moves if _tile_ok(sites, m)]

    @staticmethod
    def _resources_exhausted(ctx: NodeContext) -> bool:
        result = ctx.parent.result if ctx.parent else None
        if result is None or result.correct or result.stage not in (Stage.COMPILE, Stage.SANDBOX):
            return False
        return bool(RESOURCE_ERRORS.search(f"{result.reason or ''}\n{result.log_tail}"))

    @staticmethod
    def _direction_rank(move: Move, shrink_first: bool) -> int:
        if not shrink_first:
            return 0
        site, value = move.changes[0]
        return 0 if value < site.value else 1

    def propose(self, ctx: NodeContext, n: int, cancel: threading.Event) -> list[Proposal]:
        if ctx.parent is None or n <= 0:
            return []
        parent = ctx.parent.source
        known = set(ctx.known_hashes) | {source_hash(s.source) for s in ctx.siblings}
        known.add(source_hash(parent))
        failed = set(ctx.failures)
        proposals: list[Proposal] = []
        for move in self.moves(parent, ctx):
            if cancel.is_set() or len(proposals) >= n:
                break
            if any(move.note in f for f in failed):
                continue
            child = apply(parent, move)
            digest = source_hash(child)
            if digest in known:
                continue
            try:
                ast.parse(child)
            except SyntaxError:
                continue
            known.add(digest)
            proposals.append(Proposal(source=child, operator=self.name, note=move.note))
        return proposals
