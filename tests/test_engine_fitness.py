"""Fitness, the spread rule for a new best, and the termination rules (pure functions)."""

from __future__ import annotations

import time

import pytest
from kernelevolve.search.fitness import MODELLED_EPSILON, fitness, kind_mismatch, significantly_better
from kernelevolve.search.results import EvalResult, ShapeTiming, Stage, TimingKind, TimingStats, Verdict
from kernelevolve.search.termination import Termination


def stats(median: float, p20: float | None = None, p80: float | None = None) -> TimingStats:
    return TimingStats(median, median if p20 is None else p20, median if p20 is None else p20,
                       median if p80 is None else p80, 20)  # fmt: skip


def result(kind: TimingKind, *sets: tuple[TimingStats, float]) -> EvalResult:
    timings = [
        ShapeTiming(f"seed:{i}", [[8]], kind, cand, stats(base)) for i, (cand, base) in enumerate(sets)
    ]
    return EvalResult(Verdict.CORRECT, Stage.DONE, timing_kind=kind, timings=timings)


def test_fitness_is_the_geomean_speedup_and_zero_for_failures() -> None:
    r = result(TimingKind.MEASURED, (stats(1.0), 2.0), (stats(1.0), 8.0))
    assert fitness(r, TimingKind.MEASURED) == pytest.approx(4.0)
    assert fitness(EvalResult(Verdict.REJECTED, Stage.COMPILE), TimingKind.MEASURED) == 0.0
    assert fitness(None, None) == 0.0
    assert fitness(EvalResult(Verdict.CORRECT, Stage.DONE), None) == 0.0  # untimed


def test_other_timing_kind_is_recorded_but_scores_zero_with_a_warning() -> None:
    measured = result(TimingKind.MEASURED, (stats(1.0), 2.0))
    assert fitness(measured, TimingKind.MODELLED) == 0.0
    assert kind_mismatch(measured, TimingKind.MODELLED) == (
        "measured timing in a modelled run: recorded, excluded from ranking"
    )
    assert kind_mismatch(measured, TimingKind.MEASURED) is None


def test_a_win_inside_the_measured_spread_is_not_a_new_best() -> None:
    incumbent = result(TimingKind.MEASURED, (stats(1.00, 0.95, 1.05), 2.0))
    noisy = result(TimingKind.MEASURED, (stats(0.98, 0.96, 1.00), 2.0))  # p80 1.00 > incumbent p20 0.95
    clear = result(TimingKind.MEASURED, (stats(0.90, 0.89, 0.93), 2.0))  # p80 0.93 < 0.95
    assert fitness(noisy, TimingKind.MEASURED) > fitness(incumbent, TimingKind.MEASURED)
    assert not significantly_better(noisy, incumbent)
    assert significantly_better(clear, incumbent)
    assert significantly_better(clear, None)


def test_modelled_wins_need_the_epsilon_margin() -> None:
    incumbent = result(TimingKind.MODELLED, (stats(1.0), 1.0))
    tiny = result(TimingKind.MODELLED, (stats(1.0 / (1 + MODELLED_EPSILON / 2)), 1.0))
    real = result(TimingKind.MODELLED, (stats(1.0 / (1 + MODELLED_EPSILON * 2)), 1.0))
    assert not significantly_better(tiny, incumbent)
    assert significantly_better(real, incumbent)
    assert not significantly_better(real, result(TimingKind.MEASURED, (stats(1.0), 1.0)))


def test_termination_rules_fire_in_order() -> None:
    t = Termination(max_steps=5, patience=2, target_speedup=3.0)
    assert t.reason() is None
    t.record(1.5, improved=True)
    t.record(1.4, improved=False)
    assert t.reason() is None and t.steps_left(in_flight=2) == 1
    t.record(1.4, improved=False)
    assert t.reason() == "no improvement in the last 2 evaluations"
    t.record(3.5, improved=True)
    assert t.reason() == "target speedup 3x reached (3.50x)"
    t.cancel()
    assert t.reason() == "cancelled"


def test_time_budget_counts_earlier_sessions() -> None:
    t = Termination(max_steps=100, time_budget_s=10.0, elapsed_before_s=9.99)
    time.sleep(0.02)
    assert t.reason() == "time budget of 10 s used"
    assert Termination(max_steps=1, evaluated=1).reason() == "step budget of 1 evaluations used"


def test_production_sets_alone_make_the_headline_when_they_were_timed() -> None:
    def timing(name: str, cand_ms: float, base_ms: float) -> ShapeTiming:
        return ShapeTiming(name, [[8]], TimingKind.MEASURED, stats(cand_ms), stats(base_ms))

    tiny_and_big = EvalResult(
        Verdict.CORRECT,
        Stage.DONE,
        timing_kind=TimingKind.MEASURED,
        timings=[
            timing("test:0", 0.010, 0.005),
            timing("benchmark:0", 1.0, 2.0),
            timing("benchmark:1", 1.0, 8.0),
        ],
    )
    assert [t.input_set for t in tiny_and_big.headline_timings] == ["benchmark:0", "benchmark:1"]
    assert tiny_and_big.speedup == pytest.approx(4.0)
    assert fitness(tiny_and_big, TimingKind.MEASURED) == pytest.approx(4.0)
    no_benchmark = result(TimingKind.MODELLED, (stats(1.0), 2.0), (stats(1.0), 8.0))
    assert no_benchmark.headline_timings == no_benchmark.timings
