"""The tools of one episode: the candidate file held in memory, lint, quick test, knowledge lookup.

Nothing the model sends is executed in this process: ``lint`` is pure AST work and ``quick_test``
goes through the harness's sandboxed worker (``evaluate`` with ``skip_timing`` and one seed).
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelevolve.search.config import EvalConfig
from kernelevolve.search.problem import ProblemError, check_candidate_source

CANDIDATE = "candidate.py"
PROBLEM = "problem.py"

TOOL_SPECS: list[dict[str, Any]] = [
    {
        "name": "read_file",
        "description": (
            "Read a file: 'candidate.py' (the kernel file you are editing), 'problem.py' (the PyTorch "
            "reference, read-only) or 'knowledge/<id>' for a knowledge-base document by id."
        ),
        "input_schema": {
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
        },
    },
    {
        "name": "write_file",
        "description": "Replace the whole content of candidate.py.",
        "input_schema": {
            "type": "object",
            "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
            "required": ["path", "content"],
        },
    },
    {
        "name": "replace_in_file",
        "description": "Replace one exact, unique occurrence of `old` with `new` in candidate.py.",
        "input_schema": {
            "type": "object",
            "properties": {"path": {"type": "string"}, "old": {"type": "string"}, "new": {"type": "string"}},
            "required": ["path", "old", "new"],
        },
    },
    {
        "name": "lint",
        "description": "Check candidate.py: syntax, class ModelNew present, and the static anti-cheat rules.",
        "input_schema": {"type": "object", "properties": {}},
    },
    {
        "name": "quick_test",
        "description": (
            "Compile and check candidate.py for correctness on one random seed plus the problem's test "
            "inputs, in the sandboxed harness, without timing. Limited uses per episode: lint first."
        ),
        "input_schema": {"type": "object", "properties": {}},
    },
    {
        "name": "search_knowledge",
        "description": "Search the knowledge base (Triton guidance, hardware notes, verified code samples).",
        "input_schema": {
            "type": "object",
            "properties": {"query": {"type": "string"}},
            "required": ["query"],
        },
    },
]


def lint_source(source: str) -> str | None:
    """None when the file passes the syntax, ModelNew and static checks; else one readable report."""
    try:
        check_candidate_source(source, CANDIDATE)
    except ProblemError as exc:
        return str(exc)
    from kernelevolve.search.static_check import check, format_violations

    violations = check(source, CANDIDATE)
    if violations:
        return "static anti-cheat check failed: " + format_violations(violations, limit=12)
    return None


QuickTest = Callable[[str], str]  # candidate source -> a short report


def harness_quick_test(problem: Path, config: EvalConfig, cancel: threading.Event) -> QuickTest:
    def run(source: str) -> str:
        from kernelevolve.search.harness import evaluate

        quick = dataclasses.replace(config, skip_timing=True, seeds=(0,))
        result = evaluate(problem, source, quick, candidate_name=CANDIDATE, cancel=cancel)
        if result.correct:
            return f"PASSED correctness on {len(result.input_sets)} input set(s) (no timing in quick tests)."
        lines = [f"REJECTED at stage {result.stage.value}: {result.reason}"]
        lines += [f"  {s.name} {s.shapes}: {s.reason}" for s in result.input_sets if not s.passed][:4]
        if result.log_tail.strip():
            lines.append("log tail:\n" + result.log_tail.strip()[-1500:])
        return "\n".join(lines)

    return run


@dataclass
class Workspace:
    """The files an episode sees; only candidate.py is writable."""

    problem_source: str
    candidate: str
    quick_test: QuickTest | None = None
    read_doc: Callable[[str], str | None] = lambda _id: None
    search_docs: Callable[[str], str] = lambda _q: "knowledge search unavailable"
    quick_tests_left: int = 2
    edited: bool = False
    calls: list[str] = field(default_factory=list)

    def call(self, name: str, args: dict[str, Any]) -> tuple[str, bool]:
        """Run one tool; returns (text for the model, is_error)."""
        self.calls.append(name)
        try:
            handler = getattr(self, f"_tool_{name}")
        except AttributeError:
            return f"unknown tool {name!r}", True
        try:
            return handler(**args)
        except TypeError as exc:  # wrong or missing arguments
            return f"bad arguments for {name}: {exc}", True

    def _tool_read_file(self, path: str) -> tuple[str, bool]:
        path = path.strip().lstrip("./")
        if path == CANDIDATE:
            return self.candidate or "(empty: no kernel yet)", False
        if path == PROBLEM:
            return self.problem_source, False
        if path.startswith("knowledge/"):
            text = self.read_doc(path.removeprefix("knowledge/"))
            return (text, False) if text is not None else (f"no knowledge document {path!r}", True)
        return f"no such file {path!r}: use candidate.py, problem.py or knowledge/<id>", True

    def _writable(self, path: str) -> str | None:
        if path.strip().lstrip("./") != CANDIDATE:
            return f"only {CANDIDATE} can be written"
        return None

    def _tool_write_file(self, path: str, content: str) -> tuple[str, bool]:
        if (err := self._writable(path)) is not None:
            return err, True
        self.candidate = content
        self.edited = True
        return f"wrote {CANDIDATE} ({len(content.splitlines())} lines)", False

    def _tool_replace_in_file(self, path: str, old: str, new: str) -> tuple[str, bool]:
        if (err := self._writable(path)) is not None:
            return err, True
        count = self.candidate.count(old) if old else 0
        if count != 1:
            return f"`old` must occur exactly once in {CANDIDATE}; it occurs {count} times", True
        self.candidate = self.candidate.replace(old, new, 1)
        self.edited = True
        return "replaced 1 occurrence", False

    def _tool_lint(self) -> tuple[str, bool]:
        report = lint_source(self.candidate)
        return ("lint passed", False) if report is None else (report, True)

    def _tool_quick_test(self) -> tuple[str, bool]:
        report = lint_source(self.candidate)
        if report is not None:
            return "lint failed, fix it first: " + report, True
        if self.quick_test is None:
            return "quick tests are unavailable in this run", True
        if self.quick_tests_left <= 0:
            return "no quick tests left in this episode: finish with your best file", True
        self.quick_tests_left -= 1
        return self.quick_test(self.candidate), False

    def _tool_search_knowledge(self, query: str) -> tuple[str, bool]:
        return self.search_docs(query), False
