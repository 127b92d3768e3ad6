"""A synthetic GPU result for tests of what happens *after* a measurement (learning, retrieval).

Made up, not recorded: this machine has no GPU, so the numbers (and the driver/CUDA versions) only
stand for a row the engine would write on an H200. No test checks a timing with them, and nothing
built from them is shown as a measurement.
"""

from __future__ import annotations

from kernelevolve.search.results import (
    EvalResult,
    Fingerprint,
    Roofline,
    ShapeTiming,
    Stage,
    TimingKind,
    TimingStats,
    Verdict,
)


def stats(ms: float) -> TimingStats:
    return TimingStats(median_ms=ms, min_ms=ms * 0.98, p20_ms=ms * 0.99, p80_ms=ms * 1.01, reps=50)


def gpu_result(kind: TimingKind, candidate_ms: float) -> EvalResult:
    return EvalResult(
        verdict=Verdict.CORRECT,
        stage=Stage.DONE,
        timing_kind=kind,
        timings=[
            ShapeTiming(
                input_set="seed:0",
                shapes=[[4096, 4096]],
                kind=kind,
                candidate=stats(candidate_ms),
                eager=stats(0.20),
                compile=stats(0.12),
                roofline=Roofline("nvidia-h200", 134_217_728, 0, 0.031, "memory"),
            )
        ],
        fingerprint=Fingerprint(
            device="NVIDIA H200",
            driver="575.51",
            cuda="12.9",
            torch="2.11.0",
            triton="3.6.0",
            python="3.12.3",
        ),
    )
