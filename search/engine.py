"""The tree search: (fitness, selection policy, operators, termination) over kernel candidates.

Contract shared by the CLI (`kernelevolve evolve`) and the language server. Nothing here
imports pygls. ``Search.run`` blocks; callers that must not block run it on a thread of their
own and call ``cancel`` from anywhere.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from kernelevolve.search.config import EvalConfig
from kernelevolve.search.events import EventSink

Strategy = Literal["greedy", "beam", "mcts", "evolve"]


@dataclass(frozen=True)
class SearchConfig:
    strategy: Strategy = "greedy"
    max_steps: int = 24  # evaluated candidates, draft phase included
    time_budget_s: float | None = None
    patience: int | None = 8  # stop after this many evaluations without a new best
    target_speedup: float | None = None
    draft_size: int = 4  # independent proposals from the spec before expansion
    parallel: int | None = None  # candidates in flight; None: bounded by GPUs and cores
    eval: EvalConfig = field(default_factory=EvalConfig)
    llm: bool = False  # use the LLM operator (needs an API key)
    llm_model: str | None = None
    llm_budget_usd: float | None = None
    warm_start: bool = True


@dataclass
class SearchOutcome:
    run_id: int
    status: str  # "finished", "cancelled", "failed"
    reason: str
    evaluated: int
    best_candidate_id: int | None
    best_speedup: float | None
    best_timing_kind: str | None
    best_path: Path | None  # written kernel file, when a correct candidate was found


class Search:
    def __init__(
        self,
        problem: Path,
        config: SearchConfig,
        db_path: Path,
        *,
        on_event: EventSink | None = None,
        resume_run: int | None = None,
        out_path: Path | None = None,
    ) -> None:
        raise NotImplementedError("implemented by the engine work item")

    @property
    def run_id(self) -> int:
        raise NotImplementedError

    def run(self) -> SearchOutcome:
        raise NotImplementedError

    def cancel(self) -> None:
        raise NotImplementedError
