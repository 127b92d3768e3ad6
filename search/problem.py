"""Problem and candidate files: the KernelBench convention plus our documented extensions.

A *problem* module defines ``class Model(nn.Module)``, ``get_inputs()`` and ``get_init_inputs()``.
Optional extensions (see docs/problem-format.md):

- ``get_test_inputs()`` -> list of input lists: odd sizes and edge cases, checked for correctness
  (and timed when their shapes differ from ``get_inputs()``).
- ``get_benchmark_inputs()`` -> list of input lists: production-size sets, checked and timed on a
  GPU only (too slow for the CPU interpreter).
- ``ATOL`` / ``RTOL``: floats, or dicts keyed by dtype name ("float32", "bfloat16", ...).
- ``INT_INPUTS``: indices of inputs that are integer tensors and must keep their dtype.

A *candidate* module defines ``class ModelNew`` with the same constructor and launches
``@triton.jit`` kernels. This module only reads files; nothing here imports or runs them.
"""

from __future__ import annotations

import ast
import hashlib
from dataclasses import dataclass, field
from pathlib import Path

PROBLEM_REQUIRED = ("Model", "get_inputs", "get_init_inputs")
PROBLEM_OPTIONAL = ("get_test_inputs", "get_benchmark_inputs", "ATOL", "RTOL", "INT_INPUTS")
CANDIDATE_REQUIRED = ("ModelNew",)


class ProblemError(ValueError):
    """A problem or candidate file is unusable; the message is one line that names the cause."""


def source_hash(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()


def read_source(path: Path, what: str) -> str:
    if not path.exists():
        raise ProblemError(f"{what} file not found: {path}")
    if not path.is_file():
        raise ProblemError(f"{what} path is not a file: {path}")
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ProblemError(f"{what} file cannot be read: {path}: {exc}") from exc


def parse(source: str, filename: str) -> ast.Module:
    try:
        return ast.parse(source, filename=filename)
    except SyntaxError as exc:
        raise ProblemError(f"{filename}:{exc.lineno}: syntax error: {exc.msg}") from exc


def top_level_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.ImportFrom | ast.Import):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def check_problem_source(source: str, filename: str) -> ast.Module:
    tree = parse(source, filename)
    missing = [n for n in PROBLEM_REQUIRED if n not in top_level_names(tree)]
    if missing:
        raise ProblemError(f"{filename}: problem file lacks {', '.join(missing)} (KernelBench format)")
    return tree


def check_candidate_source(source: str, filename: str) -> ast.Module:
    tree = parse(source, filename)
    if "ModelNew" not in top_level_names(tree):
        raise ProblemError(f"{filename}: candidate file lacks class ModelNew")
    return tree


def load_problem_file(path: Path) -> str:
    source = read_source(path, "problem")
    check_problem_source(source, str(path))
    return source


def load_candidate_file(path: Path) -> str:
    source = read_source(path, "candidate")
    check_candidate_source(source, str(path))
    return source


@dataclass(frozen=True)
class TensorSpec:
    shape: tuple[int, ...]
    dtype: str  # torch dtype name without the "torch." prefix


@dataclass
class ProblemSpec:
    """What the engine knows about a problem without running it in-process.

    Built by ``kernelevolve.search.harness.describe_problem``, which imports the problem in a
    sandboxed worker and reports its inputs; ``signature`` keys warm starts in history.
    """

    path: Path
    name: str
    source: str
    source_hash: str
    inputs: list[TensorSpec | str] = field(default_factory=list)  # str: a non-tensor argument's repr
    init_inputs: list[str] = field(default_factory=list)
    has_test_inputs: bool = False
    has_benchmark_inputs: bool = False
    ops: list[str] = field(default_factory=list)  # ATen ops seen when the reference ran, in order
    device: str = "cpu"

    @property
    def signature(self) -> str:
        """Op, shapes, dtypes and device: what makes two problems interchangeable for warm start."""
        parts = [",".join(self.ops) or self.source_hash[:16]]
        for spec in self.inputs:
            if isinstance(spec, TensorSpec):
                parts.append(f"{spec.dtype}[{'x'.join(map(str, spec.shape))}]")
            else:
                parts.append(spec)
        parts.append(f"init({','.join(self.init_inputs)})")
        parts.append(self.device)
        return "|".join(parts)
