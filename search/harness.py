"""Public entry points of the evaluation harness.

``evaluate`` runs one candidate against one problem in a sandboxed worker process and returns an
``EvalResult``; it never raises for anything the candidate does. ``describe_problem`` imports a
problem in a worker and reports its inputs and ops.
"""

from __future__ import annotations

import threading
from pathlib import Path

from kernelevolve.search.config import EvalConfig
from kernelevolve.search.problem import ProblemSpec
from kernelevolve.search.results import EvalResult


def evaluate(
    problem: Path,
    candidate_source: str,
    config: EvalConfig | None = None,
    *,
    candidate_name: str = "candidate.py",
    cancel: threading.Event | None = None,
) -> EvalResult:
    raise NotImplementedError("implemented by the harness work item")


def describe_problem(problem: Path, config: EvalConfig | None = None) -> ProblemSpec:
    raise NotImplementedError("implemented by the harness work item")
