"""Termination rules: step budget, wall-clock budget, patience, target speedup, cancellation.

``Termination.reason()`` returns the first rule that fires (a sentence for the user) or None.
``cancel()`` may be called from any thread.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field


@dataclass
class Termination:
    max_steps: int
    time_budget_s: float | None = None
    patience: int | None = None
    target_speedup: float | None = None
    evaluated: int = 0  # evaluations so far, those before a resume included
    since_improvement: int = 0
    best_fitness: float = 0.0
    elapsed_before_s: float = 0.0  # wall time already spent by earlier sessions of a resumed run
    cancel_event: threading.Event = field(default_factory=threading.Event)
    _started: float = field(default_factory=time.monotonic)

    def cancel(self) -> None:
        self.cancel_event.set()

    @property
    def cancelled(self) -> bool:
        return self.cancel_event.is_set()

    def elapsed_s(self) -> float:
        return self.elapsed_before_s + time.monotonic() - self._started

    def record(self, fitness: float, improved: bool) -> None:
        """Count one finished evaluation."""
        self.evaluated += 1
        if improved:
            self.best_fitness = max(self.best_fitness, fitness)
            self.since_improvement = 0
        else:
            self.since_improvement += 1

    def steps_left(self, in_flight: int = 0) -> int:
        return max(0, self.max_steps - self.evaluated - in_flight)

    def reason(self) -> str | None:
        if self.cancelled:
            return "cancelled"
        if self.target_speedup is not None and self.best_fitness >= self.target_speedup:
            return f"target speedup {self.target_speedup:g}x reached ({self.best_fitness:.2f}x)"
        if self.evaluated >= self.max_steps:
            return f"step budget of {self.max_steps} evaluations used"
        if self.time_budget_s is not None and self.elapsed_s() >= self.time_budget_s:
            return f"time budget of {self.time_budget_s:g} s used"
        if self.patience is not None and self.since_improvement >= self.patience:
            return f"no improvement in the last {self.patience} evaluations"
        return None
