"""Fitness: speedup over the best baseline, 0 for any failure, one timing kind per ranking.

A run ranks candidates by ``fitness``. Its timing kind is fixed by the first timed evaluation;
a later result of the other kind (measured vs modelled) is recorded but scores 0 in this run's
ranking, with a warning, so the two are never compared. ``significantly_better`` decides
whether a candidate beats the incumbent by more than the measured spread.
"""

from __future__ import annotations

import math

from kernelevolve.search.results import EvalResult, ShapeTiming, TimingKind

# Modelled timings have no spread; a win must still clear this relative margin.
MODELLED_EPSILON = 0.005


def fitness(result: EvalResult | None, run_kind: TimingKind | None) -> float:
    """Speedup (geometric mean over the headline input sets: production sets when timed, else all)
    against the best baseline; 0 on failure,
    when untimed, or when the timing kind differs from the run's."""
    if result is None or not result.correct:
        return 0.0
    if run_kind is not None and result.timing_kind is not run_kind:
        return 0.0
    speedup = result.speedup
    if speedup is None or not math.isfinite(speedup) or speedup <= 0:
        return 0.0
    return speedup


def kind_mismatch(result: EvalResult, run_kind: TimingKind | None) -> str | None:
    """A warning when a timed result's kind differs from the run's, else None."""
    if run_kind is None or result.timing_kind is None or result.timing_kind is run_kind:
        return None
    return f"{result.timing_kind.value} timing in a {run_kind.value} run: recorded, excluded from ranking"


def _bounds(t: ShapeTiming) -> tuple[float, float]:
    """Pessimistic and optimistic speedup of one input set: the candidate at p80 and at p20."""
    base = t.best_baseline_ms
    if t.kind is TimingKind.MODELLED or t.candidate.spread_ms <= 0:
        mid = base / t.candidate.median_ms
        return mid, mid
    return base / max(t.candidate.p80_ms, 1e-12), base / max(t.candidate.p20_ms, 1e-12)


def _geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def significantly_better(candidate: EvalResult, incumbent: EvalResult | None) -> bool:
    """True when ``candidate`` is faster than ``incumbent`` by more than the measured spread:
    its pessimistic speedup (p80 time) beats the incumbent's optimistic one (p20 time). Modelled
    timings have zero spread, so they must win by ``MODELLED_EPSILON`` instead."""
    if not candidate.correct or not candidate.timings:
        return False
    if incumbent is None or not incumbent.correct or not incumbent.timings:
        return True
    if candidate.timing_kind is not incumbent.timing_kind:
        return False
    cand = [_bounds(t) for t in candidate.headline_timings]
    inc = [_bounds(t) for t in incumbent.headline_timings]
    zero_spread = all(lo == hi for lo, hi in cand + inc)
    margin = MODELLED_EPSILON if zero_spread else 0.0
    return _geomean([lo for lo, _ in cand]) > _geomean([hi for _, hi in inc]) * (1 + margin)
