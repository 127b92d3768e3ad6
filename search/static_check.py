"""Static anti-cheat: an AST allow-list for candidate files, run before any candidate code.

``check(source)`` returns every rule the candidate breaks; an empty list means it may go on to the
runtime checks (compile, correctness, ghost replay). The candidate's Python may only:

- import torch, torch.nn (as nn), torch.nn.functional (as F; any use of it is still rejected),
  triton, triton.language (as tl), libdevice, math, typing and __future__, under canonical names;
- define ``@triton.jit`` kernels (optionally under ``triton.autotune``/``triton.heuristics``),
  plain helper functions and ``class ModelNew(nn.Module)``;
- allocate (``torch.empty/empty_like/empty_strided/zeros/zeros_like/ones/ones_like/full/full_like``,
  ``Tensor.new_empty/new_zeros/new_ones/new_full``), take views and metadata (``view``,
  ``reshape``, ``contiguous``, ``transpose``, ``permute``, ``t``, ``expand``, ``unsqueeze``,
  ``squeeze``, ``flatten``, ``narrow``, ``split``, ``.shape``, ``.stride()``, ``.numel()``...),
  and launch kernels ``kernel[grid](...)``;
- build ``nn`` layers, ``nn.Parameter`` and call ``nn.init`` inside ``__init__`` (they mirror the
  reference's weights); query the device (``torch.cuda.get_device_properties``).

Casts (``.to``, ``.float``, ``.half``...) count as computation: they are how precision gets
downgraded, and a kernel casts in registers for free. Arithmetic, comparisons and Python builtins
such as ``sum``/``max`` are allowed on Python values (shapes, strides, literals, ``meta[...]``) and
rejected on anything that may hold a tensor: parameters of ``forward``, results of allocation or
view methods, ``self`` attributes set from tensors or layers, and whatever flows from them,
including through helper-function calls (argument kinds are propagated to the helper's
parameters). A ``@triton.jit`` body may use ``tl``/``triton.language``, ``libdevice``, ``math``,
its own arguments and locals, module-level constants and other jit functions.

Lambdas and nested functions called in the file take the kinds of their arguments; those handed to
Triton (grids, heuristics) receive Python numbers and the kernel's arguments, which they may read
(``meta["BLOCK"]``, ``args["x"].stride(0)``) but not call compute methods on. Launch hooks
(``pre_hook``/``post_hook``) are refused outright.

Layout: rule tables in ``static_rules``; scope and tensor-kind tracking in ``static_scope``; imports,
qualified names and violation collection in ``static_names``; statement and expression rules here.
"""

from __future__ import annotations

import ast
import contextlib

from kernelevolve.search import static_rules as R
from kernelevolve.search.static_names import Enough, NameRules, Violation
from kernelevolve.search.static_scope import (
    Facts,
    Frame,
    FunctionInfo,
    ModuleInfo,
    annotation_text,
    function_info,
    is_mutable_literal,
    is_super_call,
    root_name,
    stored_names,
    target_names,
)

__all__ = ["Violation", "check", "format_violations"]

MODEL_CLASS = "ModelNew"
_MAX_PASSES = 6
_MAX_DEPTH = 100
_MAX_SOURCE_CHARS = 100_000  # honest candidates are a few KB; this bounds the parent's work


def check(source: str, filename: str = "candidate.py") -> list[Violation]:
    """Every allow-list rule ``source`` breaks, sorted by line; empty when the file may run."""
    try:
        tree = ast.parse(source, filename=filename)
    except SyntaxError as exc:
        return [Violation("syntax", exc.lineno or 0, f"syntax error: {exc.msg}")]
    except (ValueError, RecursionError, MemoryError) as exc:  # null bytes, absurd nesting
        return [Violation("syntax", 0, f"cannot parse: {type(exc).__name__}: {exc}")]
    if len(source) > _MAX_SOURCE_CHARS:
        return [
            Violation(
                "too-complex",
                0,
                f"{len(source)} characters; a candidate may have at most {_MAX_SOURCE_CHARS}",
            )
        ]
    deep = _too_deep(tree)
    if deep is not None:
        return [deep]
    try:
        return _check_tree(tree)
    except RecursionError:
        return [Violation("too-complex", 0, "the file is too deeply nested to check; simplify it")]


def _check_tree(tree: ast.Module) -> list[Violation]:
    module = ModuleInfo.collect(tree)
    facts = Facts()
    for _ in range(_MAX_PASSES):
        before = facts.snapshot()
        _Checker(module, facts, report=False).run(tree)
        if facts.snapshot() == before:
            break
    checker = _Checker(module, facts)
    with contextlib.suppress(Enough):  # a file this broken gets its first MAX_VIOLATIONS reasons
        checker.run(tree)
    return sorted(checker.violations, key=lambda v: (v.line, v.rule, v.message))


def _too_deep(tree: ast.Module) -> Violation | None:
    """Honest launchers nest a few dozen levels at most; refuse absurd nesting before recursing."""
    stack: list[tuple[ast.AST, int]] = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > _MAX_DEPTH:
            return Violation(
                "too-complex",
                getattr(node, "lineno", 0),
                f"code nested more than {_MAX_DEPTH} levels deep; split the expression",
            )
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return None


def format_violations(violations: list[Violation], limit: int = 8) -> str:
    """One reason string for an EvalResult: the first ``limit`` violations, then a count."""
    shown = "; ".join(str(v) for v in violations[:limit])
    extra = len(violations) - limit
    return shown + (f"; and {extra} more" if extra > 0 else "")


# --- the checker ---------------------------------------------------------------------------------


class _Checker(NameRules, ast.NodeVisitor):
    """The rules: walks the tree once, flagging what the allow-list does not cover."""

    def run(self, tree: ast.Module) -> None:
        self.visit(tree)
        self._check_shape_of_module(tree)

    # -- may this expression hold a tensor? -------------------------------------------------------

    # -- imports ----------------------------------------------------------------------------------

    # -- definitions ------------------------------------------------------------------------------

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._function(node)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self.flag(node, "concurrency", f"async def {node.name}: coroutines can run after the timer stops")
        self._function(node)

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        is_kernel = any(self.m.is_kernel_decorator(d) for d in node.decorator_list)
        for dec in node.decorator_list:
            self._check_decorator(dec)
        for default in node.args.defaults + [d for d in node.args.kw_defaults if d is not None]:
            if is_mutable_literal(default):
                self.flag(
                    default,
                    "module-state",
                    f"mutable default argument in {node.name}() persists across calls (a cache); "
                    "use None or a tuple",
                )
            self.visit(default)
        cls = self.frame.cls if self.frame.kind == "class" else None
        if cls and node.name.startswith("__") and node.name.endswith("__") and node.name != "__init__":
            self.flag(
                node,
                "introspection",
                f"{cls}.{node.name} overrides Python machinery; a candidate class may define __init__, "
                "forward and plain methods",
            )
        if cls:
            key: str | None = f"{cls}.{node.name}"
        elif self.frame.kind == "module":
            key = node.name
        else:  # a nested def: its parameters take the kinds of its call sites, like a helper's
            key = f"{self.function_key() or ''}.<locals>.{node.name}"
            self.frame.defs[node.name] = function_info(key, node, self.m, skip_self=False)
        all_params = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
        if node.args.vararg:
            all_params.append(node.args.vararg)
        if node.args.kwarg:
            all_params.append(node.args.kwarg)
        local_names = {a.arg for a in all_params} | stored_names(node.body)
        if is_kernel:
            kind = "kernel"
        elif cls:
            kind = "init" if node.name == "__init__" else "method"
        else:
            kind = "function"
        names: dict[str, bool] = {}
        passed = self.facts.tensor_params.get(key or "", set())
        positional = node.args.posonlyargs + node.args.args
        defaults: dict[str, ast.expr] = dict(
            zip(
                [a.arg for a in positional[len(positional) - len(node.args.defaults) :]],
                node.args.defaults,
                strict=True,
            )
        )
        defaults.update(
            {a.arg: d for a, d in zip(node.args.kwonlyargs, node.args.kw_defaults, strict=True) if d}
        )
        for i, a in enumerate(all_params):
            if cls and i == 0 and a in positional:
                continue  # self
            default_tensor = a.arg in defaults and self.tensor(defaults[a.arg])
            names[a.arg] = default_tensor or self._param_is_tensor(a, kind, node.name, a.arg in passed)
        for a in all_params:
            if a.annotation is not None:
                self.visit(a.annotation)
        if node.returns is not None:
            self.visit(node.returns)
        frame = Frame(kind, names, local_names, key, cls if kind in ("init", "method") else None)
        if key in self.facts.escaped and kind == "function":
            frame.meta = {n for n, tensor in names.items() if not tensor}  # Triton may call it with tensors
        self.frames.append(frame)
        if cls and kind in ("init", "method"):
            self.frame.cls = cls
        try:
            for stmt in node.body:
                self.visit(stmt)
        finally:
            self.frames.pop()

    def _param_is_tensor(self, a: ast.arg, kind: str, fn_name: str, passed_tensor: bool) -> bool:
        if kind == "kernel":
            return False
        if kind == "init":  # ModelNew's come from get_init_inputs(); helper classes' from their callers
            return annotation_text(a.annotation) in ("torch.Tensor", "Tensor") or passed_tensor
        ann = annotation_text(a.annotation)
        if ann in R.SCALAR_ANNOTATIONS:
            return False
        if ann in ("torch.Tensor", "Tensor"):
            return True
        if kind == "method" and fn_name == "forward":
            return True  # the harness passes get_inputs() here
        return passed_tensor

    def _check_decorator(self, dec: ast.expr) -> None:
        target = dec.func if isinstance(dec, ast.Call) else dec
        qual = self.m.resolve(target)
        ok = qual in R.ALLOWED_DECORATORS or (
            isinstance(target, ast.Name) and target.id in R.ALLOWED_BUILTIN_DECORATORS and qual is None
        )
        if not ok:
            self.flag(
                dec,
                "decorator",
                f"decorator @{self.src(dec)} is not allowed; use triton.jit, triton.autotune, "
                "triton.heuristics, staticmethod, classmethod or property",
            )
        if isinstance(dec, ast.Call):
            for arg in dec.args + [k.value for k in dec.keywords]:
                self.visit(arg)

    def visit_Lambda(self, node: ast.Lambda, key: str | None = None, call: ast.Call | None = None) -> None:
        """Lambda parameters are Python values (grid ``meta``, heuristics ``args``) unless the lambda is
        called in the file with tensors: then they take the kinds of those arguments."""
        params = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
        for default in node.args.defaults:
            self.visit(default)
        kinds = {a.arg: False for a in params}
        if key is not None:
            for name in self.facts.tensor_params.get(key, set()):
                kinds[name] = True
        if call is not None:
            for a, arg in zip(params, call.args, strict=False):
                kinds[a.arg] = self.tensor(arg)
            for kw in call.keywords:
                if kw.arg in kinds:
                    kinds[kw.arg] = self.tensor(kw.value)
        if node.args.vararg:
            kinds[node.args.vararg.arg] = call is not None and any(self.tensor(a) for a in call.args)
        frame = Frame("lambda", kinds, set(kinds), key)
        if call is None:
            frame.meta = {n for n, tensor in kinds.items() if not tensor}
        self.frames.append(frame)
        try:
            self.visit(node.body)
            if key is not None and self.tensor(node.body):
                self.facts.tensor_returns.add(key)
        finally:
            self.frames.pop()

    def _named_lambda(self, target: ast.expr, value: ast.expr) -> bool:
        """``f = lambda ...`` inside a function: register it so calls to ``f`` propagate kinds."""
        if not (isinstance(value, ast.Lambda) and isinstance(target, ast.Name) and self.in_function):
            return False
        key = f"{self.function_key() or ''}.<lambda>.{target.id}"
        params = [a.arg for a in value.args.posonlyargs + value.args.args]
        self.frame.defs[target.id] = FunctionInfo(key, params, [a.arg for a in value.args.kwonlyargs], False)
        self.visit_Lambda(value, key=key)
        return True

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for base in node.bases:
            qual = self.m.resolve(base)
            if qual == "torch.nn.Module":
                continue
            name = self.src(base)
            if name == "Model" or name.endswith(".Model"):
                why = "inheriting the reference Model runs the reference instead of a kernel"
            else:
                why = f"{node.name} may inherit only nn.Module"
            self.flag(base, "inheritance", f"class {node.name}({name}): {why}")
        for kw in node.keywords:
            self.flag(node, "inheritance", f"class {node.name}: `{kw.arg}=` in a class header is not allowed")
        for dec in node.decorator_list:
            self.flag(dec, "decorator", f"class decorator @{self.src(dec)} is not allowed")
        for stmt in node.body:
            if (
                isinstance(stmt, ast.Assign | ast.AnnAssign)
                and stmt.value is not None
                and is_mutable_literal(stmt.value)
            ):
                self.flag(
                    stmt,
                    "module-state",
                    f"class-level container in {node.name} persists across calls (a cache); "
                    "keep state in tensors created in __init__",
                )
        self.frames.append(Frame("class", {}, set(), None, node.name))
        try:
            for stmt in node.body:
                self.visit(stmt)
        finally:
            self.frames.pop()
        if node.name == MODEL_CLASS:
            self._check_forward(node)

    def _check_forward(self, node: ast.ClassDef) -> None:
        forward = next(
            (
                s
                for s in node.body
                if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef) and s.name == "forward"
            ),
            None,
        )
        if forward is None:
            self.flag(
                node, "empty-forward", f"{MODEL_CLASS} defines no forward(); it must launch Triton kernels"
            )
            return
        body = [
            s
            for s in forward.body
            if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
            and not isinstance(s, ast.Pass)
        ]
        if not body:
            self.flag(forward, "empty-forward", f"{MODEL_CLASS}.forward does nothing (pass/docstring only)")

    def _check_shape_of_module(self, tree: ast.Module) -> None:
        if not any(f.is_kernel for f in self.m.functions.values()):
            self.flag(
                tree.body[0] if tree.body else tree, "no-triton-kernel", "no @triton.jit kernel is defined"
            )
        if MODEL_CLASS not in self.m.classes:
            self.flag(
                tree.body[0] if tree.body else tree, "missing-model", f"no class {MODEL_CLASS} is defined"
            )

    # -- statements -------------------------------------------------------------------------------

    def visit_Try(self, node: ast.Try) -> None:
        self.flag(
            node,
            "try-except",
            "try/except/finally can fall back to the reference when the kernel fails; let errors propagate",
        )
        self.generic_visit(node)

    visit_TryStar = visit_Try  # type: ignore[assignment]

    def visit_Global(self, node: ast.Global) -> None:
        self.flag(node, "global-statement", f"`global {', '.join(node.names)}` keeps state across calls")

    def visit_Nonlocal(self, node: ast.Nonlocal) -> None:
        self.flag(node, "global-statement", f"`nonlocal {', '.join(node.names)}` keeps state across calls")

    def visit_With(self, node: ast.With) -> None:
        for item in node.items:
            ctx = item.context_expr
            qual = self.m.resolve(ctx.func if isinstance(ctx, ast.Call) else ctx)
            if qual not in R.ALLOWED_CONTEXTS and not (qual and qual in R.TORCH_STREAM_NAMES):
                self.flag(
                    ctx,
                    "context-manager",
                    f"`with {self.src(ctx)}` is not allowed; the only context managers a candidate may "
                    "use are torch.no_grad(), torch.inference_mode() and torch.cuda.device()",
                )
            if item.optional_vars is not None:
                self.bind(item.optional_vars, False)
        self.generic_visit(node)

    def visit_AsyncWith(self, node: ast.AsyncWith) -> None:
        self.flag(node, "concurrency", "async with: coroutines can run after the timer stops")
        self.generic_visit(node)

    def visit_AsyncFor(self, node: ast.AsyncFor) -> None:
        self.flag(node, "concurrency", "async for: coroutines can run after the timer stops")
        self.generic_visit(node)

    def visit_Await(self, node: ast.Await) -> None:
        self.flag(node, "concurrency", "await: coroutines can run after the timer stops")
        self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> None:
        if len(node.targets) == 1 and self._named_lambda(node.targets[0], node.value):
            self.bind(node.targets[0], False)
            return
        self.visit(node.value)
        tensor = self.tensor(node.value)
        for target in node.targets:
            self._store(target, node.value, tensor)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self.visit(node.annotation)
        if node.value is not None:
            self.visit(node.value)
            self._store(node.target, node.value, self.tensor(node.value))

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self.visit(node.value)
        if not self.in_kernel and (self.tensor(node.target) or self.tensor(node.value)):
            self.flag(
                node,
                "tensor-arithmetic",
                f"`{self.src(node)}` computes on a tensor in Python; do the arithmetic in the kernel",
            )
        self._store(node.target, node.value, self.tensor(node.value) or self.tensor(node.target))

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        self.visit(node.value)
        self._store(node.target, node.value, self.tensor(node.value))

    def visit_Delete(self, node: ast.Delete) -> None:
        for target in node.targets:
            if isinstance(target, ast.Attribute):
                self._store_attribute(target, "deleting")
                if self.m.resolve(target):
                    continue
            self.visit(target)

    def visit_For(self, node: ast.For) -> None:
        self.visit(node.iter)
        self.bind(node.target, self.tensor(node.iter))
        for stmt in node.body + node.orelse:
            self.visit(stmt)

    def visit_Yield(self, node: ast.Yield) -> None:
        self._returns(node.value)

    def visit_YieldFrom(self, node: ast.YieldFrom) -> None:
        self._returns(node.value)

    def _returns(self, value: ast.expr | None) -> None:
        if value is not None:
            self.visit(value)
            key = self.function_key()
            if key and self.tensor(value):
                self.facts.tensor_returns.add(key)

    def visit_Return(self, node: ast.Return) -> None:
        self._returns(node.value)

    def _store(self, target: ast.expr, value: ast.expr, tensor: bool) -> None:
        if isinstance(value, ast.Name) and value.id == "self" and not self.in_kernel:
            self.flag(value, "alias", f"`{self.src(target)} = self` hides writes to self; use self directly")
        if isinstance(target, ast.Name):
            self.bind(target, tensor)
        elif isinstance(target, ast.Tuple | ast.List):
            if isinstance(value, ast.Tuple | ast.List) and len(value.elts) == len(target.elts):
                for t, v in zip(target.elts, value.elts, strict=True):
                    self._store(t, v, self.tensor(v))
            else:
                for t in target.elts:
                    self._store(t, value, tensor)
        elif isinstance(target, ast.Starred):
            self._store(target.value, value, tensor)
        elif isinstance(target, ast.Attribute):
            self._store_attribute(target, "assigning", tensor)
            if not self.m.resolve(target):
                self.visit(target.value)
        elif isinstance(target, ast.Subscript):
            self._store_subscript(target)
            self.visit(target.value)
            self.visit(target.slice)

    def _store_attribute(self, target: ast.Attribute, verb: str, tensor: bool = False) -> None:
        qual = self.m.resolve(target)
        root = root_name(target)
        if qual:
            self.flag(
                target,
                "module-patch",
                f"{verb} {self.src(target)} patches a library module (e.g. a timer); candidates may not "
                "change library code",
            )
        elif root == "self":
            if self.in_init and isinstance(target.value, ast.Name) and self.current_class:
                key = f"{self.current_class}.{target.attr}"
                self.facts.self_attrs[key] = self.facts.self_attrs.get(key, False) or tensor
            elif not self.in_init:
                self.flag(
                    target,
                    "state-outside-init",
                    f"{verb} {self.src(target)} outside __init__ keeps state across calls (a cache); "
                    "set attributes only in __init__",
                )
        elif (
            root
            and root in self.m.variables | set(self.m.functions) | set(self.m.classes)
            and not self.is_local(root)
        ):
            self.flag(
                target,
                "module-state",
                f"{verb} {self.src(target)} writes to a module-level object, which persists across calls",
            )
        elif root and not self.in_kernel and self.name_is_tensor(root):
            self.flag(
                target,
                "tensor-write",
                f"{verb} {self.src(target)} changes a tensor in Python; write through a kernel",
            )
        elif root and tensor and isinstance(target.value, ast.Name):
            self.bind(target.value, True)  # an object now holding a tensor

    def _store_subscript(self, target: ast.Subscript) -> None:
        root = root_name(target)
        if self.in_kernel:
            return
        if root == "self" and not self.in_init:
            self.flag(
                target,
                "state-outside-init",
                f"writing {self.src(target)} outside __init__ keeps state across calls (a cache)",
            )
        elif self.tensor(target.value):
            self.flag(
                target,
                "tensor-write",
                f"writing {self.src(target)} copies into a tensor with torch; write through a kernel",
            )
        elif root and root in self.m.variables and self.in_function and not self.is_local(root):
            self.flag(
                target,
                "module-state",
                f"writing {self.src(target)} fills a module-level container, which persists across calls "
                "(a cache)",
            )

    # -- expressions ------------------------------------------------------------------------------

    def visit_Name(self, node: ast.Name) -> None:
        if not isinstance(node.ctx, ast.Load):
            return
        name = node.id
        if self.in_kernel:
            self._check_kernel_name(node)
            return
        local = self.local_def(name)
        if local is not None or (name in self.m.functions and not self.is_local(name)):
            self.facts.escaped.add(local.key if local is not None else name)  # passed as a value
        if self.is_local(name):
            return
        if name in self.m.aliases:
            if name in self.m.module_aliases:
                self.flag(
                    node,
                    "alias",
                    f"the module {name} is used as a value, which hides what is called; "
                    f"use {name}.<name>(...) directly",
                )
            else:
                self._check_qual(self.m.aliases[name], node)
            return
        if name in self.m.functions or name in self.m.classes or name in self.m.variables:
            return
        if name in R.BUILTIN_RULES:
            rule, why = R.BUILTIN_RULES[name]
            self.flag(node, rule, f"{name} is not allowed: {why}")
        elif name.startswith("__") and name.endswith("__"):
            self.flag(node, "introspection", f"{name} reaches into interpreter internals")
        elif name not in R.ALLOWED_BUILTINS and name != "self":
            self.flag(
                node, "forbidden-builtin", f"{name} is not an allowed builtin or a name defined in the file"
            )

    def visit_Attribute(self, node: ast.Attribute) -> None:
        dunder = node.attr.startswith("__") and node.attr.endswith("__")
        if dunder and not (node.attr == "__init__" and is_super_call(node.value)):
            self.flag(node, "introspection", f"{self.src(node)} reaches into interpreter internals")
        if node.attr in R.FRAME_ATTRS:
            self.flag(node, "frame-inspection", f"{self.src(node)} reads interpreter frames")
        qual = self.m.resolve(node)
        if qual:
            self._check_qual(qual, node)
            return
        if (
            isinstance(node.ctx, ast.Load)
            and not self.in_kernel
            and node.attr in R.TENSOR_COMPUTE_METHODS
            and self.tensor(node.value)
        ):
            self.flag(
                node,
                "tensor-method",
                f"{self.src(node)} refers to a torch compute method; only allocation, views and launching "
                "are allowed",
            )
        self.visit(node.value)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        args = list(node.args) + [k.value for k in node.keywords]
        if self.in_kernel:
            self.generic_visit(node)
            return
        qual = self.m.resolve(func)
        if qual:
            self._check_qual(qual, func)
            if qual == "torch.Tensor":
                self.flag(
                    node,
                    "torch-compute",
                    f"{self.src(node)} builds a tensor from Python data; allocate with torch.empty and fill it "
                    "in a kernel",
                )
            if qual in R.TRITON_HOOK_TAKERS:
                for kw in node.keywords:
                    if kw.arg in R.TRITON_HOOK_ARGS:
                        self.flag(
                            kw.value,
                            "triton-hook",
                            f"{kw.arg}= runs arbitrary Python around each launch (outside the kernel and "
                            "outside ghost replay); allocate zeroed buffers with torch.zeros instead",
                        )
            if qual.startswith("math.") and any(self.tensor(a) for a in args):
                self.flag(node, "tensor-arithmetic", f"{self.src(node)} computes on a tensor in Python")
        elif isinstance(func, ast.Name):
            self._call_name(node, func, args)
        elif isinstance(func, ast.Attribute):
            self._call_method(node, func)
        elif isinstance(func, ast.Lambda):
            self.visit_Lambda(func, call=node)
        else:
            self.visit(func)
        for arg in args:
            self.visit(arg)

    def _call_name(self, node: ast.Call, func: ast.Name, args: list[ast.expr]) -> None:
        name = func.id
        fn = self.m.functions.get(name)
        local = self.local_def(name)
        if local is not None:
            self._record_call(local, node)
            return
        if fn is not None and not self.is_local(name):
            self._record_call(fn, node)
            return
        init = self.m.functions.get(f"{name}.__init__")
        if name in self.m.classes and init is not None and not self.is_local(name):
            self._record_call(init, node)  # constructor parameters take the kinds of its arguments
            return
        if (
            name in R.TENSOR_CONSUMING_BUILTINS
            and not self.is_local(name)
            and name not in self.m.variables
            and any(self.tensor(a) for a in args)
        ):
            self.flag(
                node,
                "tensor-arithmetic",
                f"{self.src(node)} computes on a tensor in Python; do it in the kernel",
            )
        self.visit(func)

    def _call_method(self, node: ast.Call, func: ast.Attribute) -> None:
        base, method = func.value, func.attr
        base_root = root_name(base)
        if (
            base_root
            and any(base_root in f.meta for f in self.frames)
            and method not in R.TENSOR_SCALAR_METHODS | R.META_METHODS
        ):
            self.flag(
                node,
                "tensor-method",
                f"{self.src(node)}: a grid/heuristics lambda receives the kernel's arguments, tensors "
                "included; it may only read them (meta[...], .get, .stride(), .numel())",
            )
        if (
            method.startswith("__")
            and method.endswith("__")
            and not (method == "__init__" and is_super_call(base))
        ):
            self.flag(func, "introspection", f"{self.src(func)} reaches into interpreter internals")
        if isinstance(base, ast.Name) and base.id == "self" and self.current_class:
            key = f"{self.current_class}.{method}"
            fn = self.m.functions.get(key)
            if fn is not None:
                self._record_call(fn, node)
            elif not (self.in_init and method in R.INIT_SELF_METHODS):
                self.flag(
                    node,
                    "torch-compute",
                    f"self.{method}(...) runs a torch module or nn.Module method; forward may only "
                    "allocate and launch Triton kernels",
                )
            return
        root = root_name(base)
        if method in R.MUTATING_METHODS and root:
            if root == "self" and not self.in_init:
                self.flag(
                    node,
                    "state-outside-init",
                    f"{self.src(func)}(...) mutates state on self across calls (a cache)",
                )
            elif (
                root in self.m.variables
                and self.in_function
                and not self.is_local(root)
                and isinstance(base, ast.Name | ast.Attribute | ast.Subscript)
            ):
                self.flag(
                    node,
                    "module-state",
                    f"{self.src(func)}(...) mutates a module-level container, which persists across calls",
                )
        if self.tensor(base) and method not in R.TENSOR_VIEW_METHODS | R.TENSOR_SCALAR_METHODS:
            if method in R.CAST_METHODS:
                self.flag(
                    node,
                    "tensor-method",
                    f"{self.src(node)} casts in Python, which is computation and can downgrade precision; "
                    "load and cast inside the kernel (x.to(tl.float32))",
                )
            else:
                self.flag(
                    node,
                    "tensor-method",
                    f"{self.src(node)}: .{method}() computes with torch; a candidate may only allocate, take "
                    "views (view/reshape/contiguous/transpose/...) and launch kernels",
                )
        self.visit(base)

    def _record_call(self, fn: FunctionInfo, node: ast.Call) -> None:
        passed = self.facts.tensor_params.setdefault(fn.key, set())
        for i, arg in enumerate(node.args):
            if isinstance(arg, ast.Starred):
                if self.tensor(arg.value):
                    passed.update(fn.params[i:])
                continue
            if i < len(fn.params) and self.tensor(arg):
                passed.add(fn.params[i])
        for kw in node.keywords:
            if kw.arg is None:
                if self.tensor(kw.value):
                    passed.update(fn.params + fn.kwonly)
            elif self.tensor(kw.value):
                passed.add(kw.arg)

    def visit_BinOp(self, node: ast.BinOp) -> None:
        if not self.in_kernel and (self.tensor(node.left) or self.tensor(node.right)):
            self.flag(
                node,
                "tensor-arithmetic",
                f"`{self.src(node)}` computes on a tensor in Python; arithmetic is allowed only on Python "
                "numbers (shapes, strides, literals); do tensor math in the kernel",
            )
        self.generic_visit(node)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> None:
        if not self.in_kernel and self.tensor(node.operand):
            self.flag(node, "tensor-arithmetic", f"`{self.src(node)}` computes on a tensor in Python")
        self.generic_visit(node)

    def visit_Compare(self, node: ast.Compare) -> None:
        identity = all(isinstance(op, ast.Is | ast.IsNot) for op in node.ops)
        operands = [node.left, *node.comparators]
        if not self.in_kernel and not identity and any(self.tensor(o) for o in operands):
            self.flag(node, "tensor-arithmetic", f"`{self.src(node)}` compares tensors in Python")
        self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        loads = not self.in_kernel and isinstance(node.ctx, ast.Load)
        if loads and self.tensor(node.value) and (self.tensor(node.slice) or _advanced_index(node.slice)):
            self.flag(
                node,
                "tensor-indexing",
                f"{self.src(node)} indexes a tensor with a tensor or a sequence (a gather in torch); "
                "gather inside the kernel",
            )
        self.generic_visit(node)

    def _comprehension(self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp) -> None:
        self.frames.append(Frame("comp", {}, {n for g in node.generators for n in target_names(g.target)}))
        try:
            for g in node.generators:
                self.visit(g.iter)
                self.bind(g.target, self.tensor(g.iter))
                for cond in g.ifs:
                    self.visit(cond)
            if isinstance(node, ast.DictComp):
                self.visit(node.key)
                self.visit(node.value)
            else:
                self.visit(node.elt)
        finally:
            self.frames.pop()

    visit_ListComp = _comprehension  # type: ignore[assignment]
    visit_SetComp = _comprehension  # type: ignore[assignment]
    visit_GeneratorExp = _comprehension  # type: ignore[assignment]
    visit_DictComp = _comprehension  # type: ignore[assignment]


def _advanced_index(index: ast.expr) -> bool:
    """A list, set or comprehension inside a subscript makes it advanced indexing: a gather."""
    return any(
        isinstance(n, ast.List | ast.Set | ast.ListComp | ast.SetComp | ast.GeneratorExp)
        or (
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Name)
            and n.func.id in ("list", "range", "sorted")
        )
        for n in ast.walk(index)
    )
