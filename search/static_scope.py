"""Scope facts for the static check: what a candidate file defines, and which values may be tensors.

``ModuleInfo`` records imports (local name -> qualified name), functions, classes and module-level
names. ``ScopeTracker`` walks with the checker and answers "may this expression hold a tensor?":
``forward``'s parameters, allocations, views, ``self`` attributes set from tensors or layers and
whatever flows from them may; shapes, strides, literals and ``meta[...]`` do not. ``Facts`` carry
what one pass learns (helper parameters that receive tensors, helpers that return them, ``self``
attributes, functions handed to Triton as values) into the next, until nothing changes.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import SupportsIndex

from kernelevolve.search import static_rules as R


@dataclass
class FunctionInfo:
    key: str
    params: list[str]
    kwonly: list[str]
    is_kernel: bool


@dataclass
class ModuleInfo:
    aliases: dict[str, str] = field(default_factory=dict)  # local name -> qualified name
    module_aliases: set[str] = field(default_factory=set)  # local names bound to whole modules
    functions: dict[str, FunctionInfo] = field(default_factory=dict)  # "f" or "Class.m"
    classes: dict[str, set[str]] = field(default_factory=dict)  # class -> its method names
    variables: set[str] = field(default_factory=set)  # module-level assigned names

    @classmethod
    def collect(cls, tree: ast.Module) -> ModuleInfo:
        info = cls()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.asname:
                        info.aliases[a.asname] = a.name
                        info.module_aliases.add(a.asname)
                    else:
                        root = a.name.split(".")[0]
                        info.aliases[root] = root
                        info.module_aliases.add(root)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for a in node.names:
                    if a.name == "*":
                        continue
                    qual = f"{node.module}.{a.name}"
                    local = a.asname or a.name
                    info.aliases[local] = qual
                    if qual in R.IMPORT_ALIASES or qual in ("triton.runtime.driver",):
                        info.module_aliases.add(local)
        for stmt in module_level_statements(tree.body):
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
                info.functions[stmt.name] = function_info(stmt.name, stmt, info, skip_self=False)
            elif isinstance(stmt, ast.ClassDef):
                methods = {s.name for s in stmt.body if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef)}
                info.classes[stmt.name] = methods
                for s in stmt.body:
                    if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef):
                        key = f"{stmt.name}.{s.name}"
                        info.functions[key] = function_info(key, s, info, skip_self=True)
            else:
                for target in assigned_names(stmt):
                    info.variables.add(target)
        return info

    def resolve(self, node: ast.expr) -> str | None:
        """Qualified name of a Name/Attribute chain rooted at an import, else None."""
        if isinstance(node, ast.Name):
            return self.aliases.get(node.id)
        if isinstance(node, ast.Attribute):
            base = self.resolve(node.value)
            return f"{base}.{node.attr}" if base else None
        return None

    def is_kernel_decorator(self, dec: ast.expr) -> bool:
        target = dec.func if isinstance(dec, ast.Call) else dec
        return self.resolve(target) in R.KERNEL_DECORATORS


def function_info(
    key: str, fn: ast.FunctionDef | ast.AsyncFunctionDef, info: ModuleInfo, skip_self: bool
) -> FunctionInfo:
    params = [a.arg for a in fn.args.posonlyargs + fn.args.args]
    if skip_self and params:
        params = params[1:]
    is_kernel = any(info.is_kernel_decorator(d) for d in fn.decorator_list)
    return FunctionInfo(key, params, [a.arg for a in fn.args.kwonlyargs], is_kernel)


def module_level_statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements that run at import time, looking inside module-level if/for/while/with blocks."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, ast.If | ast.For | ast.While):
            yield from module_level_statements(stmt.body + stmt.orelse)
        elif isinstance(stmt, ast.With):
            yield from module_level_statements(stmt.body)


def assigned_names(stmt: ast.stmt) -> Iterator[str]:
    targets: list[ast.expr] = []
    if isinstance(stmt, ast.Assign):
        targets = list(stmt.targets)
    elif isinstance(stmt, ast.AnnAssign | ast.AugAssign | ast.For):
        targets = [stmt.target]
    for target in targets:
        for node in ast.walk(target):
            if isinstance(node, ast.Name):
                yield node.id


@dataclass
class Facts:
    """What one pass learns for the next: which values may be tensors."""

    tensor_params: dict[str, set[str]] = field(default_factory=dict)  # function key -> params
    tensor_returns: set[str] = field(default_factory=set)
    self_attrs: dict[str, bool] = field(default_factory=dict)  # "Class.attr" -> may be a tensor
    escaped: set[str] = field(default_factory=set)  # functions used as values (hooks, grids, heuristics)

    def snapshot(self) -> tuple[object, ...]:
        return (
            sorted((k, sorted(v)) for k, v in self.tensor_params.items()),
            sorted(self.tensor_returns),
            sorted(self.self_attrs.items()),
            sorted(self.escaped),
        )


@dataclass
class Frame:
    kind: str  # "module" | "kernel" | "function" | "method" | "init" | "lambda" | "class"
    names: dict[str, bool]  # local name -> may hold a tensor
    locals: set[str]
    key: str | None = None  # function key for facts
    cls: str | None = None
    defs: dict[str, FunctionInfo] = field(default_factory=dict)  # nested defs and named lambdas
    meta: set[str] = field(default_factory=set)  # lambda params Triton fills (grid meta, heuristics args)


class _Frames(list[Frame]):
    """The frame stack; pushing or popping invalidates the tracker's kind cache."""

    def __init__(self, frames: list[Frame], tracker: ScopeTracker) -> None:
        super().__init__(frames)
        self.tracker = tracker

    def append(self, frame: Frame) -> None:
        self.tracker.version += 1
        super().append(frame)

    def pop(self, index: SupportsIndex = -1) -> Frame:
        self.tracker.version += 1
        return super().pop(index)


class ScopeTracker:
    """Frames of the walk and the tensor-kind inference; the checker subclasses it."""

    def __init__(self, module: ModuleInfo, facts: Facts) -> None:
        self.m = module
        self.facts = facts
        self.frames: list[Frame] = _Frames([Frame("module", {}, set())], self)
        self.version = 0  # bumped whenever a binding or the frame stack changes: invalidates the cache
        self._kinds: dict[int, tuple[int, bool]] = {}

    @property
    def frame(self) -> Frame:
        return self.frames[-1]

    @property
    def in_kernel(self) -> bool:
        return any(f.kind == "kernel" for f in self.frames)

    @property
    def in_init(self) -> bool:
        return any(f.kind == "init" for f in self.frames)

    @property
    def in_function(self) -> bool:
        return any(f.kind in ("function", "method", "init", "kernel", "lambda") for f in self.frames)

    @property
    def current_class(self) -> str | None:
        for f in reversed(self.frames):
            if f.cls:
                return f.cls
        return None

    def is_local(self, name: str) -> bool:
        return any(name in f.locals or name in f.names for f in self.frames[1:])

    def name_is_tensor(self, name: str) -> bool:
        for f in reversed(self.frames):
            if name in f.names:
                return f.names[name]
        return False

    def bind(self, target: ast.expr, tensor: bool) -> None:
        self.version += 1
        if isinstance(target, ast.Name):
            self.frame.names[target.id] = self.frame.names.get(target.id, False) or tensor
        elif isinstance(target, ast.Tuple | ast.List):
            for elt in target.elts:
                self.bind(elt, tensor)
        elif isinstance(target, ast.Starred):
            self.bind(target.value, tensor)

    def tensor(self, node: ast.expr | None) -> bool:
        """May ``node`` hold a tensor? Cached per node until a binding or the frame stack changes."""
        if node is None or isinstance(node, ast.Constant | ast.Lambda | ast.JoinedStr):
            return False
        cached = self._kinds.get(id(node))
        if cached is not None and cached[0] == self.version:
            return cached[1]
        result = self._tensor(node)
        self._kinds[id(node)] = (self.version, result)
        return result

    def _tensor(self, node: ast.expr) -> bool:
        if isinstance(node, ast.Name):
            return node.id != "self" and self.name_is_tensor(node.id)
        if isinstance(node, ast.Attribute):
            if self.m.resolve(node):
                return False
            if node.attr in R.TENSOR_SCALAR_ATTRS:
                return False
            if isinstance(node.value, ast.Name) and node.value.id == "self" and self.current_class:
                if node.attr in self.m.classes.get(self.current_class, set()):
                    return False
                return self.facts.self_attrs.get(f"{self.current_class}.{node.attr}", True)
            return self.tensor(node.value)
        if isinstance(node, ast.Call):
            return self.call_returns_tensor(node)
        if isinstance(node, ast.Subscript):
            return self.tensor(node.value)
        if isinstance(node, ast.BinOp):
            return self.tensor(node.left) or self.tensor(node.right)
        if isinstance(node, ast.UnaryOp):
            return self.tensor(node.operand)
        if isinstance(node, ast.IfExp):
            return self.tensor(node.body) or self.tensor(node.orelse)
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            return any(self.tensor(e) for e in node.elts)
        if isinstance(node, ast.Dict):
            return any(self.tensor(v) for v in node.values)
        if isinstance(node, ast.Starred):
            return self.tensor(node.value)
        if isinstance(node, ast.NamedExpr):
            return self.tensor(node.value)
        if isinstance(node, ast.ListComp | ast.GeneratorExp | ast.SetComp):
            return any(self.tensor(g.iter) for g in node.generators) or self._comp_elt_tensor(node)
        return False

    def _comp_elt_tensor(self, node: ast.ListComp | ast.GeneratorExp | ast.SetComp) -> bool:
        self.frames.append(Frame("comp", {}, set()))
        try:
            for g in node.generators:
                self.bind(g.target, self.tensor(g.iter))
            return self.tensor(node.elt)
        finally:
            self.frames.pop()

    def call_returns_tensor(self, node: ast.Call) -> bool:
        func = node.func
        qual = self.m.resolve(func)
        if qual:
            return qual in R.TORCH_ALLOCATORS or qual.startswith("torch.nn.") or qual == "torch.nn.Parameter"
        if isinstance(func, ast.Lambda):
            return self.tensor(func.body) or any(self.tensor(a) for a in node.args)
        args = [*node.args, *(k.value for k in node.keywords)]
        if isinstance(func, ast.Name):
            if func.id in self.m.classes:  # an object built from tensors holds tensors
                return any(self.tensor(a) for a in args)
            local = self.local_def(func.id)
            if local is not None:
                return local.key in self.facts.tensor_returns
            fn = self.m.functions.get(func.id)
            if fn is not None:
                return False if fn.is_kernel else fn.key in self.facts.tensor_returns
            if func.id in R.SCALAR_BUILTINS:
                return False
            return self.tensor(func) or any(self.tensor(a) for a in args)  # zip(x, y), list(x), ...
        if isinstance(func, ast.Attribute):
            base = func.value
            if isinstance(base, ast.Name) and base.id == "self" and self.current_class:
                key = f"{self.current_class}.{func.attr}"
                if key in self.m.functions:
                    return key in self.facts.tensor_returns
                return True
            if func.attr in R.TENSOR_SCALAR_METHODS:
                return False
            return self.tensor(base)
        return False  # kernel[grid](...) and friends

    def function_key(self) -> str | None:
        for f in reversed(self.frames):
            if f.kind in ("function", "method", "init", "kernel", "lambda"):
                return f.key
        return None

    def local_def(self, name: str) -> FunctionInfo | None:
        for f in reversed(self.frames):
            if name in f.defs:
                return f.defs[name]
        return None


def root_name(node: ast.expr) -> str | None:
    while isinstance(node, ast.Attribute | ast.Subscript):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def is_super_call(node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"


def is_mutable_literal(node: ast.expr) -> bool:
    if isinstance(node, ast.List | ast.Dict | ast.Set | ast.ListComp | ast.DictComp | ast.SetComp):
        return True
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("list", "dict", "set", "bytearray")
    )


def annotation_text(node: ast.expr | None) -> str | None:
    if node is None:
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return ast.unparse(node)


def target_names(node: ast.expr) -> Iterator[str]:
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            yield n.id


def stored_names(body: list[ast.stmt]) -> set[str]:
    names: set[str] = set()
    for stmt in body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
                names.add(node.id)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
            elif isinstance(node, ast.arg):
                names.add(node.arg)
            elif isinstance(node, ast.Import | ast.ImportFrom):
                names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names
