"""Derive a KernelBench problem file from a selection in a user's Python file.

The language server calls this when the user asks to evolve an op. It is pure Python over the
AST: nothing here imports torch or runs the user's code (the engine does that in its sandboxed
worker). The op is the enclosing ``nn.Module`` subclass (or top-level function) of the selected
line; a KernelBench problem file is used as it is. Inputs come, in order, from a ``get_inputs()``
in the file, from a recorded trace (``kernelevolve trace``), or from a comment::

    # kernelevolve: inputs=float32[32, 128], int64[32]
    # kernelevolve: inputs=[torch.randn(32, 128), torch.randint(0, 10, (32,))]
    # kernelevolve: init=[128, 1e-6]

With none of them, ``SpecUnavailable`` says what to add; nothing is guessed.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from kernelevolve.search.problem import PROBLEM_REQUIRED, top_level_names

TargetKind = Literal["problem", "module", "function"]
InputsOrigin = Literal["problem file", "get_inputs()", "trace", "comment"]

# A traced call: one record per positional argument, as search/trace.py writes them.
ArgRecord = dict[str, Any]
TraceLookup = Callable[[str], list[ArgRecord] | None]  # qualname -> args of one recorded call

_COMMENT = re.compile(r"#\s*kernelevolve:\s*(inputs|init)\s*=\s*(.+?)\s*$")
_COMPACT_ITEM = re.compile(r"^\s*([a-z]+[0-9]*)\s*\[([0-9,\s]*)\]\s*$")
_DTYPE_ALIASES = {
    "float": "float32",
    "half": "float16",
    "double": "float64",
    "long": "int64",
    "int": "int32",
    "f16": "float16",
    "f32": "float32",
    "f64": "float64",
    "bf16": "bfloat16",
    "i32": "int32",
    "i64": "int64",
}
FLOAT_DTYPES = {"float16", "bfloat16", "float32", "float64"}
INT_DTYPES = {"int8", "int16", "int32", "int64", "uint8"}


class SpecUnavailable(Exception):
    """No problem can be derived; the message tells the user what to add."""


@dataclass(frozen=True)
class OpTarget:
    """The op a selection points at: a problem file, an nn.Module class, or a function."""

    kind: TargetKind
    qualname: str
    def_line: int  # 0-based line of the `class`/`def` keyword (problem files: the Model class)
    end_line: int  # 0-based last line of the definition
    def_line_end_col: int  # length of the def line: where the inlay hint goes


@dataclass
class DerivedProblem:
    target: OpTarget
    source: str  # the KernelBench problem file's text
    path: Path  # where it lives (the user's own file for an unchanged problem file)
    inputs_from: InputsOrigin
    notes: list[str] = field(default_factory=list)


def is_problem_source(tree: ast.Module) -> bool:
    names = top_level_names(tree)
    return all(n in names for n in PROBLEM_REQUIRED)


def parse_source(source: str, display_name: str) -> ast.Module:
    try:
        return ast.parse(source, filename=display_name)
    except SyntaxError as exc:
        raise SpecUnavailable(f"{display_name}:{exc.lineno}: fix the syntax error first ({exc.msg})") from exc


def list_targets(tree: ast.Module, lines: Sequence[str]) -> list[OpTarget]:
    """Every op the file offers: its nn.Module classes and top-level functions (or Model)."""
    if is_problem_source(tree):
        model = next(
            n for n in tree.body if isinstance(n, ast.ClassDef | ast.Assign) and _defines(n, "Model")
        )
        return [_target("problem", "Model", model, lines)]
    found: list[OpTarget] = []
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and _is_module_class(node):
            found.append(_target("module", node.name, node, lines))
        elif isinstance(node, ast.FunctionDef) and not node.name.startswith("get_") and node.args.args:
            found.append(_target("function", node.name, node, lines))
    return found


def find_target(tree: ast.Module, lines: Sequence[str], line: int) -> OpTarget | None:
    """The op whose definition encloses ``line`` (0-based); a problem file's Model anywhere."""
    targets = list_targets(tree, lines)
    if targets and targets[0].kind == "problem":
        return targets[0]
    return next((t for t in targets if _starts_at(t, tree) <= line <= t.end_line), None)


def problem_path_for(out_dir: Path, file_stem: str, qualname: str) -> Path:
    safe_stem = re.sub(r"[^A-Za-z0-9_]", "_", file_stem) or "untitled"
    return out_dir / f"{safe_stem}__{qualname}.py"


def derive_problem(
    source: str,
    *,
    line: int,
    out_dir: Path,
    file_path: Path | None,
    display_name: str,
    traced: TraceLookup | None = None,
) -> DerivedProblem:
    """Build the problem for the op enclosing ``line``; raises SpecUnavailable with advice."""
    tree = parse_source(source, display_name)
    lines = source.splitlines()
    target = find_target(tree, lines, line)
    if target is None:
        raise SpecUnavailable(
            f"{display_name}:{line + 1}: put the cursor inside an nn.Module class or a top-level "
            "function (or open a KernelBench problem file) to evolve a kernel"
        )
    stem = Path(display_name).stem
    if target.kind == "problem":
        on_disk = _read(file_path)
        if file_path is not None and on_disk == source:
            return DerivedProblem(target, source, file_path, "problem file")
        path = problem_path_for(out_dir, stem, "Model")
        return DerivedProblem(target, source, path, "problem file", ["unsaved buffer copied"])
    names = top_level_names(tree)
    inputs_code, origin, int_inputs = _inputs_code(tree, lines, target, names, traced, display_name)
    init_code = _init_code(tree, lines, target, names, traced, display_name)
    text = _compose(tree, source, target, file_path, display_name, inputs_code, init_code, int_inputs)
    return DerivedProblem(target, text, problem_path_for(out_dir, stem, target.qualname), origin)


def write_problem(problem: DerivedProblem) -> Path:
    """Write the derived file unless it is the user's own file or already up to date."""
    if problem.path.exists() and _read(problem.path) == problem.source:
        return problem.path
    problem.path.parent.mkdir(parents=True, exist_ok=True)
    problem.path.write_text(problem.source, encoding="utf-8")
    return problem.path


# --- inputs -------------------------------------------------------------------------------------


def _inputs_code(
    tree: ast.Module,
    lines: Sequence[str],
    target: OpTarget,
    names: set[str],
    traced: TraceLookup | None,
    display_name: str,
) -> tuple[str | None, InputsOrigin, list[int]]:
    if "get_inputs" in names:
        return None, "get_inputs()", []
    call_name = f"{target.qualname}.forward" if target.kind == "module" else target.qualname
    records = traced(call_name) if traced is not None else None
    if records is not None:
        code, ints = inputs_from_trace(records)
        return code, "trace", ints
    comment = _comment(tree, lines, target, "inputs")
    if comment is not None:
        code, ints = inputs_from_comment(comment, display_name)
        return code, "comment", ints
    raise SpecUnavailable(
        f"no inputs known for {target.qualname}: add a top-level get_inputs() to {display_name}, "
        f"run `kernelevolve trace YOUR_SCRIPT.py` so its real inputs are recorded, or add a comment "
        f"above it such as `# kernelevolve: inputs=float32[32, 128]`"
    )


def _init_code(
    tree: ast.Module,
    lines: Sequence[str],
    target: OpTarget,
    names: set[str],
    traced: TraceLookup | None,
    display_name: str,
) -> str | None:
    if "get_init_inputs" in names:
        return None
    if target.kind == "function":
        return "[]"
    comment = _comment(tree, lines, target, "init")
    if comment is not None:
        return _list_expression(comment, "init", display_name)
    records = traced(f"{target.qualname}.__init__") if traced is not None else None
    if records is not None and all(r.get("kind") == "value" for r in records):
        return "[" + ", ".join(str(r["repr"]) for r in records) + "]"
    if not _needs_init_args(tree, target.qualname):
        return "[]"
    raise SpecUnavailable(
        f"{target.qualname}() needs constructor arguments: add get_init_inputs() to {display_name} or "
        f"a comment such as `# kernelevolve: init=[128]` above the class"
    )


def inputs_from_trace(records: list[ArgRecord]) -> tuple[str, list[int]]:
    """Python list expression that rebuilds recorded inputs (shape, dtype, value range)."""
    items: list[str] = []
    ints: list[int] = []
    for i, rec in enumerate(records):
        if rec.get("kind") != "tensor":
            items.append(str(rec.get("repr", "None")))
            continue
        shape = tuple(int(d) for d in rec["shape"])
        dtype = str(rec["dtype"])
        if dtype in INT_DTYPES:
            ints.append(i)
            lo, hi = int(rec.get("min") or 0), int(rec.get("max") or 0)
            items.append(f"torch.randint({lo}, {hi + 1}, {shape!r}, dtype=torch.{dtype})")
        elif dtype == "bool":
            frac = float(rec.get("mean") or 0.5)
            items.append(f"(torch.rand({shape!r}) < {frac!r})")
        else:
            mean, std = float(rec.get("mean") or 0.0), float(rec.get("std") or 0.0)
            fmin, fmax = rec.get("min"), rec.get("max")
            expr = f"(torch.randn({shape!r}, dtype=torch.float32) * {std!r} + {mean!r})"
            if fmin is not None and fmax is not None:
                expr = f"{expr}.clamp({float(fmin)!r}, {float(fmax)!r})"
            items.append(f"{expr}.to(torch.{dtype})")
    return "[" + ", ".join(items) + "]", ints


def inputs_from_comment(text: str, display_name: str) -> tuple[str, list[int]]:
    """`float32[8, 64], int64[8]` or a Python list expression."""
    items = _split_top_level(text)
    compact = [_COMPACT_ITEM.match(item) for item in items]
    if items and all(compact):
        exprs: list[str] = []
        ints: list[int] = []
        for i, match in enumerate(compact):
            assert match is not None
            dtype = _DTYPE_ALIASES.get(match.group(1), match.group(1))
            dims = tuple(int(d) for d in match.group(2).replace(" ", "").split(",") if d)
            if dtype in FLOAT_DTYPES:
                exprs.append(f"torch.randn({dims!r}, dtype=torch.{dtype})")
            elif dtype in INT_DTYPES:
                ints.append(i)
                exprs.append(f"torch.randint(0, 16, {dims!r}, dtype=torch.{dtype})")
            elif dtype == "bool":
                exprs.append(f"(torch.rand({dims!r}) < 0.5)")
            else:
                raise SpecUnavailable(
                    f"{display_name}: unknown dtype {match.group(1)!r} in `# kernelevolve: inputs=`"
                )
        return "[" + ", ".join(exprs) + "]", ints
    return _list_expression(text, "inputs", display_name), []


def _list_expression(text: str, key: str, display_name: str) -> str:
    try:
        node = ast.parse(text, mode="eval").body
    except SyntaxError as exc:
        raise SpecUnavailable(
            f"{display_name}: `# kernelevolve: {key}=` is not a Python expression ({exc.msg})"
        ) from exc
    if not isinstance(node, ast.List | ast.Tuple):
        return f"[{text}]"  # a single item
    return "[" + ", ".join(ast.unparse(e) for e in node.elts) + "]"


def _split_top_level(text: str) -> list[str]:
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    parts.append("".join(current))
    return [p for p in parts if p.strip()]


def _comment(tree: ast.Module, lines: Sequence[str], target: OpTarget, key: str) -> str | None:
    """A `# kernelevolve: key=...` comment inside the definition or in the lines right above."""
    start = _starts_at(target, tree)
    above = start - 1
    while above >= 0 and lines[above].lstrip().startswith("#"):
        above -= 1
    for text in lines[above + 1 : target.end_line + 1]:
        match = _COMMENT.search(text)
        if match and match.group(1) == key:
            return match.group(2)
    return None


# --- the problem file ---------------------------------------------------------------------------


def _compose(
    tree: ast.Module,
    source: str,
    target: OpTarget,
    file_path: Path | None,
    display_name: str,
    inputs_code: str | None,
    init_code: str | None,
    int_inputs: list[int],
) -> str:
    kept = [("\n" if isinstance(n, _DEFS) else "") + _segment(source, n) for n in tree.body if _keep(n)]
    out = [
        f"# Generated by kernelevolve from {display_name} ({target.qualname}); edit the source, not this file.",
    ]
    out += [k for k in kept if k.startswith("from __future__")]
    if file_path is not None:
        out += ["import sys as _ke_sys", f"_ke_sys.path.insert(0, {str(file_path.parent)!r})"]
    out += [k for k in kept if not k.startswith("from __future__")]
    out += ["", "import torch", "import torch.nn as _ke_nn", ""]
    out += _model_class(tree, source, target)
    if inputs_code is not None:
        out += ["", "", "def get_inputs():", f"    return {inputs_code}"]
    if init_code is not None:
        out += ["", "", "def get_init_inputs():", f"    return {init_code}"]
    if int_inputs and "INT_INPUTS" not in top_level_names(tree):
        out += ["", f"INT_INPUTS = {int_inputs!r}"]
    return "\n".join(out) + "\n"


def _model_class(tree: ast.Module, source: str, target: OpTarget) -> list[str]:
    """``class Model``: a renamed copy of the user's module (so tools that read Model's own
    ``__init__``/``forward`` see them), a delegating subclass when ``forward`` is inherited, or a
    module whose ``forward`` calls the user's function with the same parameters."""
    node = next(n for n in tree.body if isinstance(n, _DEFS) and n.name == target.qualname)
    if isinstance(node, ast.ClassDef):
        if any(isinstance(b, ast.FunctionDef) and b.name == "forward" for b in node.body):
            text = _segment(source, node)
            name = re.escape(target.qualname)
            text = re.sub(rf"^class {name}\b", "class Model", text, count=1, flags=re.MULTILINE)
            text = re.sub(rf"\bsuper\(\s*{name}\s*,", "super(Model,", text)
            return text.rstrip("\n").splitlines()
        return [
            f"class Model({target.qualname}):",
            "    def forward(self, *args, **kwargs):",
            "        return super().forward(*args, **kwargs)",
        ]
    assert isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    params = ast.unparse(node.args)
    call = ", ".join(
        [a.arg for a in node.args.posonlyargs + node.args.args]
        + ([f"*{node.args.vararg.arg}"] if node.args.vararg else [])
        + [f"{a.arg}={a.arg}" for a in node.args.kwonlyargs]
        + ([f"**{node.args.kwarg.arg}"] if node.args.kwarg else [])
    )
    return [
        "class Model(_ke_nn.Module):",
        f"    def forward(self, {params}):" if params else "    def forward(self):",
        f"        return {target.qualname}({call})",
    ]


def _keep(node: ast.stmt) -> bool:
    if isinstance(node, ast.Import | ast.ImportFrom | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return not (isinstance(node, ast.ImportFrom) and node.level > 0)
    if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
        return not any(isinstance(n, ast.Call) for n in ast.walk(node.value))
    return False


def _segment(source: str, node: ast.stmt) -> str:
    first = node.decorator_list[0].lineno if isinstance(node, _DEFS) and node.decorator_list else node.lineno
    lines = source.splitlines()[first - 1 : node.end_lineno]
    return "\n".join(lines) + ("\n" if isinstance(node, ast.ClassDef | ast.FunctionDef) else "")


_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _is_module_class(node: ast.ClassDef) -> bool:
    for base in node.bases:
        text = ast.unparse(base)
        if text.split(".")[-1] in {"Module", "Sequential", "ModuleList"}:
            return True
    return any(isinstance(b, ast.FunctionDef) and b.name == "forward" for b in node.body)


def _needs_init_args(tree: ast.Module, qualname: str) -> bool:
    cls = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == qualname), None)
    if cls is None:
        return False
    init = next((b for b in cls.body if isinstance(b, ast.FunctionDef) and b.name == "__init__"), None)
    if init is None:
        return False
    positional = init.args.posonlyargs + init.args.args
    required = len(positional) - 1 - len(init.args.defaults)
    kw_required = sum(1 for d in init.args.kw_defaults if d is None)
    return required > 0 or kw_required > 0


def _defines(node: ast.stmt, name: str) -> bool:
    if isinstance(node, ast.ClassDef):
        return node.name == name
    return isinstance(node, ast.Assign) and any(
        isinstance(t, ast.Name) and t.id == name for t in node.targets
    )


def _target(kind: TargetKind, qualname: str, node: ast.stmt, lines: Sequence[str]) -> OpTarget:
    def_line = node.lineno - 1
    end_line = (node.end_lineno or node.lineno) - 1
    return OpTarget(kind, qualname, def_line, end_line, len(lines[def_line]) if def_line < len(lines) else 0)


def _starts_at(target: OpTarget, tree: ast.Module) -> int:
    """First line of the definition including its decorators."""
    for node in tree.body:
        if isinstance(node, _DEFS) and node.lineno - 1 == target.def_line and node.decorator_list:
            return node.decorator_list[0].lineno - 1
    return target.def_line


def _read(path: Path | None) -> str | None:
    if path is None:
        return None
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
