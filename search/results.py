"""Payloads of one evaluation: the verdict, per-input-set checks, timings and the fingerprint.

Everything here is plain data (dataclasses with ``to_dict``/``from_dict``) so that the worker can
send it over JSON, history can store it, and the CLI and language server can render it without
knowing how it was produced.
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass, field
from typing import Any, TypeVar

HARNESS_VERSION = "0.1.0"


class Verdict(str, enum.Enum):
    CORRECT = "correct"
    REJECTED = "rejected"


class Stage(str, enum.Enum):
    """Where an evaluation stopped. Ordered cheapest first, as the harness runs them."""

    LOAD = "load"  # the file could not be read or lacks a required piece
    STATIC = "static"  # AST anti-cheat rejected it before any of its code ran
    COMPILE = "compile"  # import, construction or the first launch failed
    CORRECTNESS = "correctness"  # wrong output, NaN, mutated inputs, non-determinism, ...
    GHOST = "ghost"  # output unchanged with the Triton kernels made no-ops
    TIMING = "timing"  # timing failed, or a time below the roofline floor
    SANDBOX = "sandbox"  # the worker crashed, timed out or exceeded a limit
    DONE = "done"  # every stage passed


class TimingKind(str, enum.Enum):
    MEASURED = "measured"  # CUDA events on a real GPU
    MODELLED = "modelled"  # bytes/FLOPs counted in the interpreter, priced with a roofline


@dataclass(frozen=True)
class Fingerprint:
    device: str  # "NVIDIA H200" or "cpu (Triton interpreter)"
    driver: str | None
    cuda: str | None
    torch: str
    triton: str
    python: str
    harness_version: str = HARNESS_VERSION
    hardware_model: str | None = None  # modelled timings: the knowledge/hardware entry used
    host: str | None = None
    code_hash: str | None = None  # sha256 (16 hex) of the installed kernelevolve sources: which code measured


@dataclass
class InputSetResult:
    """Correctness of the candidate on one input set."""

    name: str  # "seed:0", "test:2", "benchmark:0"
    shapes: list[list[int]]
    dtypes: list[str]
    passed: bool
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    reason: str | None = None


@dataclass
class TimingStats:
    """Repeated timings of one callable, in milliseconds."""

    median_ms: float
    min_ms: float
    p20_ms: float
    p80_ms: float
    reps: int

    @property
    def spread_ms(self) -> float:
        return self.p80_ms - self.p20_ms


@dataclass
class Roofline:
    """The speed-of-light floor for one input set on one device."""

    hardware: str  # knowledge/hardware entry, e.g. "nvidia-h200"
    bytes_moved: int  # each input read once, each output written once
    flops: int
    floor_ms: float
    bound: str  # "memory" or "compute"
    # Physical bound used to reject timings (datasheet peaks, L2-resident writes not charged).
    hard_floor_ms: float | None = None
    ceiling: str = "datasheet"  # which ceilings floor_ms used: "measured" or "datasheet"


@dataclass
class ShapeTiming:
    """Candidate and baseline timings on one input set, plus the derived speedups."""

    input_set: str
    shapes: list[list[int]]
    kind: TimingKind
    candidate: TimingStats
    eager: TimingStats
    compile: TimingStats | None = None
    compile_max_autotune: TimingStats | None = None
    roofline: Roofline | None = None
    notes: list[str] = field(default_factory=list)  # e.g. a baseline skipped, and why
    # Set when the timing cannot be trusted (side-stream work, clock mismatch); the worker rejects.
    integrity_issue: str | None = None

    def _baselines(self) -> dict[str, float]:
        medians = {"eager": self.eager.median_ms}
        for name, stats in (("compile", self.compile), ("compile_max_autotune", self.compile_max_autotune)):
            if stats is not None:
                medians[name] = stats.median_ms
        return medians

    @property
    def best_baseline(self) -> str:
        """The fastest baseline: "eager", "compile" or "compile_max_autotune"; eager wins ties."""
        medians = self._baselines()
        return min(medians, key=lambda name: medians[name])  # first of equal minima: dict order

    @property
    def best_baseline_ms(self) -> float:
        return min(self._baselines().values())

    @property
    def speedup(self) -> float:
        return self.best_baseline_ms / self.candidate.median_ms

    @property
    def speedup_vs_eager(self) -> float:
        return self.eager.median_ms / self.candidate.median_ms

    @property
    def speedup_vs_compile(self) -> float | None:
        if self.compile is None:
            return None
        return self.compile.median_ms / self.candidate.median_ms

    @property
    def roofline_fraction(self) -> float | None:
        """Floor time over candidate time: 1.0 is speed of light."""
        if self.roofline is None:
            return None
        return self.roofline.floor_ms / self.candidate.median_ms


@dataclass
class EvalResult:
    verdict: Verdict
    stage: Stage
    reason: str | None = None
    timing_kind: TimingKind | None = None
    input_sets: list[InputSetResult] = field(default_factory=list)
    timings: list[ShapeTiming] = field(default_factory=list)
    fingerprint: Fingerprint | None = None
    source_hash: str | None = None
    duration_s: float = 0.0
    log_tail: str = ""  # last lines of the worker's stdout/stderr, for feedback
    warnings: list[str] = field(default_factory=list)
    # CUDA: seconds spent waiting for other evaluations on the same GPU, and holding it alone (timing)
    gpu_wait_s: float = 0.0
    gpu_exclusive_s: float = 0.0

    @property
    def correct(self) -> bool:
        return self.verdict is Verdict.CORRECT

    @property
    def headline_timings(self) -> list[ShapeTiming]:
        """The sets the headline figures (and the search's fitness) aggregate.

        The production-size ``get_benchmark_inputs()`` sets when any were timed (on a GPU): the
        odd-sized test sets run for microseconds, are launch-bound and noisy, and would otherwise
        dominate the mean. Without benchmark sets (the CPU), every timed set. Per-set figures
        stay in ``timings``.
        """
        production = [t for t in self.timings if t.input_set.startswith("benchmark:")]
        return production or self.timings

    @property
    def speedup(self) -> float | None:
        """Geometric mean over the headline sets of the speedup against the best baseline."""
        return _geomean([t.speedup for t in self.headline_timings])

    @property
    def speedup_vs_eager(self) -> float | None:
        return _geomean([t.speedup_vs_eager for t in self.headline_timings])

    @property
    def speedup_vs_compile(self) -> float | None:
        values = [t.speedup_vs_compile for t in self.headline_timings]
        if not values or any(v is None for v in values):
            return None
        return _geomean([v for v in values if v is not None])

    @property
    def roofline_fraction(self) -> float | None:
        values = [t.roofline_fraction for t in self.headline_timings]
        if not values or any(v is None for v in values):
            return None
        return _geomean([v for v in values if v is not None])

    def to_dict(self) -> dict[str, Any]:
        return _to_jsonable(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EvalResult:
        return _from_jsonable(cls, data)

    def summary(self) -> dict[str, Any]:
        """The stable, flat shape `kernelevolve eval --json` prints."""
        return {
            "verdict": self.verdict.value,
            "stage": self.stage.value,
            "reason": self.reason,
            "timing": self.timing_kind.value if self.timing_kind else None,
            "speedup": self.speedup,
            "speedup_vs_eager": self.speedup_vs_eager,
            "speedup_vs_compile": self.speedup_vs_compile,
            "roofline_fraction": self.roofline_fraction,
            "device": self.fingerprint.device if self.fingerprint else None,
        }


def _geomean(values: list[float]) -> float | None:
    import math

    if not values or any(v <= 0 for v in values):
        return None
    return math.exp(sum(math.log(v) for v in values) / len(values))


def _to_jsonable(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: _to_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, enum.Enum):
        return obj.value
    if isinstance(obj, list | tuple):
        return [_to_jsonable(v) for v in obj]
    if isinstance(obj, dict):
        return {k: _to_jsonable(v) for k, v in obj.items()}
    return obj


T = TypeVar("T")


def _from_jsonable(cls: type[T], data: Any) -> T:
    """Rebuild a dataclass tree; unknown keys are dropped so old rows still load."""
    import typing

    hints = typing.get_type_hints(cls)
    kwargs: dict[str, Any] = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if f.name not in data:
            continue
        kwargs[f.name] = _coerce(hints[f.name], data[f.name])
    return cls(**kwargs)


def _coerce(tp: Any, value: Any) -> Any:
    import types
    import typing

    if value is None:
        return None
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return _coerce(args[0], value) if len(args) == 1 else value
    if origin is list:
        (inner,) = typing.get_args(tp)
        return [_coerce(inner, v) for v in value]
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return tp(value)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return _from_jsonable(tp, value)
    return value
