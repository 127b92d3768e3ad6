"""The operator interface: given a node and its context, propose child candidates.

The search never cares how a proposal was made. The offline operators (tuning, template) and
the LLM operator all implement ``Operator``; a new one (a remote agent, a Ray actor) slots in by
implementing ``propose``.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Protocol

from kernelevolve.search.problem import ProblemSpec
from kernelevolve.search.results import EvalResult


@dataclass
class NodeView:
    """One evaluated node as an operator sees it."""

    candidate_id: int
    source: str
    operator: str
    result: EvalResult | None  # None while not yet evaluated
    fitness: float


@dataclass
class NodeContext:
    """Everything an operator may use to propose children of ``parent``.

    ``parent`` is None in the draft phase (independent proposals from the spec alone).
    """

    spec: ProblemSpec
    parent: NodeView | None
    siblings: list[NodeView] = field(default_factory=list)  # other children of the same parent
    best: NodeView | None = None  # best node of the run so far
    failures: list[str] = field(default_factory=list)  # negative memory: what already failed, why
    run_id: int | None = None
    step: int = 0
    # Source hashes already in the run (proposed or evaluated): operators skip these.
    known_hashes: frozenset[str] = frozenset()


@dataclass
class Proposal:
    source: str
    operator: str  # "tuning", "template", "llm", "seed", "warm-start", ...
    note: str = ""  # what changed and why, one line; shown in the report and hover


class OperatorUnavailable(Exception):
    """The operator cannot serve this problem at all (e.g. an op outside the template library)."""


class StopSearch(Exception):
    """An operator asks the engine to end the run now; the message is the reason (e.g. the LLM
    budget is spent). The engine finishes the run with status 'finished' and that reason."""


class Operator(Protocol):
    name: str

    def propose(self, ctx: NodeContext, n: int, cancel: threading.Event) -> list[Proposal]:
        """Return up to ``n`` new candidate sources; ``[]`` when it has nothing new to offer."""
        ...
