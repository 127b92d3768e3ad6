"""Exceptions that end a worker job early, shared by the worker's modules."""

from __future__ import annotations

from kernelevolve.search.results import Stage


class ProblemFault(Exception):
    """The reference problem itself failed (not the candidate): becomes ProblemError in the caller."""


class EnvFault(Exception):
    """The machine cannot run this job as configured (e.g. CUDA asked for, none visible)."""


class Reject(Exception):
    """The candidate failed a check; ``stage`` and ``reason`` go into the EvalResult."""

    def __init__(self, stage: Stage, reason: str) -> None:
        super().__init__(reason)
        self.stage = stage
        self.reason = reason
