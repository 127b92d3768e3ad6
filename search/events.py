"""The typed event stream of a search. The CLI renders it; the language server forwards it.

Events are frozen dataclasses; ``to_dict`` gives the JSON shape (with a ``kind`` field) that the
server sends and that history's events table keeps.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class RunStarted:
    run_id: int
    problem: str
    strategy: str
    timing_kind: str  # "measured" or "modelled"
    device: str
    resumed: bool = False
    warm_start_candidate_id: int | None = None


@dataclass(frozen=True)
class CandidateProposed:
    run_id: int
    parent_id: int | None
    operator: str
    note: str = ""
    candidate_id: int | None = None  # the pending row the proposal was stored as


@dataclass(frozen=True)
class CandidateEvaluated:
    run_id: int
    candidate_id: int
    parent_id: int | None
    operator: str
    verdict: str  # "correct" or "rejected"
    stage: str
    reason: str | None
    speedup: float | None  # against the best baseline; None when rejected
    fitness: float
    timing_kind: str | None
    device: str
    diff: str  # unified diff against the parent (or against an empty file for drafts)
    step: int = 0


@dataclass(frozen=True)
class NewBest:
    run_id: int
    candidate_id: int
    speedup: float
    fitness: float
    timing_kind: str
    device: str


@dataclass(frozen=True)
class RunFinished:
    run_id: int
    status: str  # "finished", "cancelled", "failed"
    reason: str  # which termination rule fired, or the error
    evaluated: int
    best_candidate_id: int | None
    best_speedup: float | None


@dataclass(frozen=True)
class Notice:
    """A one-off message for the user, e.g. 'no API key: using the offline operators'."""

    run_id: int | None
    level: str  # "info", "warning", "error"
    message: str


Event = RunStarted | CandidateProposed | CandidateEvaluated | NewBest | RunFinished | Notice
EventSink = Callable[[Event], None]

_KINDS: dict[type, str] = {
    RunStarted: "run_started",
    CandidateProposed: "candidate_proposed",
    CandidateEvaluated: "candidate_evaluated",
    NewBest: "new_best",
    RunFinished: "run_finished",
    Notice: "notice",
}


def event_kind(event: Event) -> str:
    return _KINDS[type(event)]


def to_dict(event: Event) -> dict[str, Any]:
    data = dataclasses.asdict(event)
    data["kind"] = event_kind(event)
    return data


def from_dict(data: dict[str, Any]) -> Event:
    data = dict(data)
    kind = data.pop("kind")
    cls = next(c for c, k in _KINDS.items() if k == kind)
    names = {f.name for f in dataclasses.fields(cls)}
    return cls(**{k: v for k, v in data.items() if k in names})  # type: ignore[no-any-return]
