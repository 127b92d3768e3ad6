"""Names, imports and reporting for the static check.

``NameRules`` holds the violations of one walk and the rules about *names*: which modules may be
imported and under which local names, and which qualified names (``torch.empty``, ``tl.load``,
``time.perf_counter``...) a candidate's Python or a ``@triton.jit`` body may reach. The statement
and expression rules build on it in ``static_check``.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from kernelevolve.search import static_rules as R
from kernelevolve.search.static_scope import Facts, ModuleInfo, ScopeTracker

MAX_VIOLATIONS = 50


@dataclass(frozen=True)
class Violation:
    """One broken rule: its name, the line, and a sentence saying what is wrong and what to do."""

    rule: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}"


class Enough(Exception):
    """Raised inside the walk once enough violations are collected."""


class NameRules(ScopeTracker):
    """Collects violations; checks imports and every reference to a module's name."""

    def __init__(self, module: ModuleInfo, facts: Facts, report: bool = True) -> None:
        super().__init__(module, facts)
        self.report = report  # False: a pass that only gathers facts, so messages are not built
        self.found: dict[Violation, None] = {}  # ordered and without duplicates

    def flag(self, node: ast.AST, rule: str, message: str) -> None:
        if not self.report:
            return
        self.found[Violation(rule, getattr(node, "lineno", 0), message)] = None
        if len(self.found) >= MAX_VIOLATIONS:
            raise Enough

    @property
    def violations(self) -> list[Violation]:
        return list(self.found)

    def src(self, node: ast.AST) -> str:
        if not self.report:
            return ""
        text = ast.unparse(node)
        return text if len(text) <= 60 else text[:57] + "..."

    def visit_Import(self, node: ast.Import) -> None:
        for a in node.names:
            allowed = R.IMPORT_ALIASES.get(a.name)
            if allowed is None:
                self._flag_module(node, a.name)
            elif a.asname and a.asname not in allowed:
                self.flag(
                    node,
                    "alias",
                    f"`import {a.name} as {a.asname}` renames a module, which hides what is called; "
                    f"use `import {a.name}`" + (f" or `as {min(allowed)}`" if a.name != min(allowed) else ""),
                )

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        if node.level:
            self.flag(node, "forbidden-import", "relative imports are not allowed in a candidate")
            return
        allowed = R.FROM_IMPORTS.get(module)
        if allowed is None:
            self._flag_module(node, module)
            return
        for a in node.names:
            if a.name == "*":
                self.flag(
                    node, "alias", f"`from {module} import *` hides what is called; import names explicitly"
                )
            elif "*" not in allowed and a.name not in allowed:
                self.flag(
                    node,
                    "forbidden-import",
                    f"`from {module} import {a.name}` is not allowed; a candidate may import "
                    f"{', '.join(sorted(allowed))} from {module}",
                )
            elif a.asname and a.asname != a.name and R.CANONICAL_RENAMES.get((module, a.name)) != a.asname:
                self.flag(
                    node, "alias", f"`from {module} import {a.name} as {a.asname}` renames it; keep the name"
                )

    def _flag_module(self, node: ast.AST, module: str) -> None:
        root = module.split(".")[0]
        rule, why = R.MODULE_RULES.get(module) or R.MODULE_RULES.get(root) or ("forbidden-import", "")
        allowed = "torch, torch.nn, triton, triton.language, math, typing"
        reason = f": {why}" if why else f"; a candidate may import only {allowed}"
        self.flag(node, rule, f"importing {module} is not allowed{reason}")

    def _check_kernel_name(self, node: ast.Name) -> None:
        name = node.id
        if self.is_local(name) or name in R.KERNEL_BUILTINS:
            return
        if name in self.m.aliases:
            qual = self.m.aliases[name]
            if qual.split(".")[0] in ("triton", "math"):
                self._check_qual(qual, node)
                return
            self.flag(
                node,
                "torch-compute" if qual.startswith("torch") else "kernel-scope",
                f"{name} ({qual}) inside a @triton.jit kernel; kernels may use only tl, triton, libdevice, "
                "math, their arguments and module-level constants",
            )
            return
        fn = self.m.functions.get(name)
        if (fn is not None and fn.is_kernel) or name in self.m.variables:
            return
        if name in R.BUILTIN_RULES:
            rule, why = R.BUILTIN_RULES[name]
            self.flag(node, rule, f"{name} is not allowed: {why}")
            return
        self.flag(
            node,
            "kernel-scope",
            f"{name} inside a @triton.jit kernel is not a tl/triton name, an argument, a constant or "
            "another jit function",
        )

    def _check_qual(self, qual: str, node: ast.expr) -> None:
        root = qual.split(".")[0]
        shown = self.src(node)
        named = shown if shown == qual else f"{shown} ({qual})"
        if root in R.MODULE_RULES:
            rule, why = R.MODULE_RULES[root]
            if qual in R.PROCESS_CALLS:
                rule, why = R.MODULE_RULES["subprocess"]
            self.flag(node, rule, f"{named} is not allowed: {why}")
        elif root == "torch":
            self._check_torch(qual, node, named)
        elif root == "triton":
            if qual in R.TRITON_ALLOWED or qual.startswith(R.TRITON_LANGUAGE_PREFIXES):
                return
            if any(qual.startswith(a + ".") for a in R.TRITON_ALLOWED) and not self.in_kernel:
                return  # e.g. attributes of a device-properties result
            self.flag(
                node,
                "triton-internals",
                f"{named} is Triton machinery; a candidate may use triton.jit/autotune/heuristics/Config/"
                "cdiv/next_power_of_2 and triton.language",
            )

    def _check_torch(self, qual: str, node: ast.expr, named: str) -> None:
        if self.in_kernel:
            self.flag(node, "torch-compute", f"{named} inside a @triton.jit kernel; kernels use tl.* only")
            return
        if qual in R.TORCH_ALLOCATORS or qual in R.TORCH_DTYPES or qual in R.TORCH_PLAIN:
            return
        if qual in R.TORCH_STREAM_NAMES or any(qual.startswith(s + ".") for s in R.TORCH_STREAM_NAMES):
            self.flag(
                node,
                "cuda-stream",
                f"{named}: streams, events, graphs and synchronisation are not allowed; the harness "
                "launches on the current stream and times it",
            )
            return
        if qual.startswith(R.TORCH_NATIVE_PREFIXES):
            self.flag(node, "native-code", f"{named} loads or calls native code outside Triton")
            return
        parts = qual.split(".")
        if qual.startswith(R.TORCH_STATE_PREFIXES) or parts[1].startswith("_"):
            self.flag(
                node,
                "torch-state",
                f"{named} reaches torch's global state or internals (seeds, backend flags, private "
                "APIs); a candidate may not change them",
            )
            return
        if qual.startswith("torch.nn.init."):
            if self.in_init:
                return
            self.flag(node, "torch-compute", f"{named} initialises weights outside __init__")
            return
        if len(parts) == 3 and parts[1] == "nn" and parts[2][:1].isupper():
            if self.in_init:
                return  # building layers and parameters mirrors the reference's weights
            self.flag(
                node,
                "torch-compute",
                f"{named} builds a torch layer outside __init__; forward may only allocate and launch",
            )
            return
        self.flag(
            node,
            "torch-compute",
            f"{named} computes with torch; a candidate's Python may only allocate (torch.empty...), "
            "take views and launch Triton kernels",
        )
