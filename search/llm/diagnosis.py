"""Diagnose a parent's feedback into a structured bottleneck diagnosis.

The paper's context-memory step: turn the runtime artifacts of the node being expanded (failing
stage and error, or timings and roofline position) into a diagnosis that parameterises retrieval
and the prompt. Done by rules over ``EvalResult`` rather than by an extra LLM call: it is cheap,
deterministic and testable, and the model sees the evidence in the prompt anyway.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kernelevolve.search.results import EvalResult, Stage

PLATFORM_OF_ARCH = {"hopper": "hopper", "ampere": "ampere", "blackwell": "blackwell", "cdna3": "cdna3"}


@dataclass(frozen=True)
class Diagnosis:
    kind: str  # memory | compute | latency | correctness | compile
    phase: str  # draft | debug | optimise
    platform: str | None  # hopper | ampere | blackwell | cdna3 | None when unknown
    hardware: str | None  # knowledge/hardware entry, e.g. "nvidia-h200"
    summary: str  # one sentence for the prompt and the candidate's note
    evidence: list[str] = field(default_factory=list)  # facts from the feedback that support it
    deferred: list[str] = field(default_factory=list)  # secondary bottlenecks left for later steps
    query: str = ""  # retrieval query for the knowledge base

    def render(self) -> str:
        lines = [f"Bottleneck: {self.kind} (phase: {self.phase}). {self.summary}"]
        lines += [f"- {e}" for e in self.evidence]
        if self.deferred:
            lines.append("Deferred (address later, not in this step): " + "; ".join(self.deferred))
        return "\n".join(lines)


def platform_for(hardware: str | None) -> str | None:
    """Map a knowledge/hardware entry name to its platform family through its `arch` field."""
    if not hardware:
        return None
    try:
        from kernelevolve.knowledge.hardware import load_hardware  # type: ignore[attr-defined]

        arch = load_hardware(hardware).arch.lower()
    except Exception:  # unknown entry: no platform filter rather than a wrong one
        return None
    return next((p for key, p in PLATFORM_OF_ARCH.items() if key in arch), None)


def platform_of_device(device_name: str) -> str | None:
    """The platform family of a CUDA/ROCm device name ("NVIDIA H200" -> "hopper"), None if unknown."""
    try:
        from kernelevolve.knowledge.hardware import match_device  # type: ignore[attr-defined]

        spec = match_device(device_name)
    except Exception:
        return None
    return platform_for(spec.name) if spec is not None else None


def hardware_of(result: EvalResult | None, default: str | None) -> str | None:
    """The hardware a result was timed on (measured: matched device name; modelled: the model entry)."""
    fp = result.fingerprint if result else None
    if fp is not None:
        if fp.hardware_model:
            return fp.hardware_model
        try:
            from kernelevolve.knowledge.hardware import match_device  # type: ignore[attr-defined]

            spec = match_device(fp.device)
        except Exception:
            spec = None
        if spec is not None:
            return spec.name
    return default


def diagnose(
    result: EvalResult | None, *, default_hardware: str | None = None, op_hint: str = ""
) -> Diagnosis:
    """``result`` is the parent's evaluation; None means the draft phase (no parent yet)."""
    hardware = hardware_of(result, default_hardware)
    platform = platform_for(hardware)
    if result is None:
        return Diagnosis(
            kind="memory",
            phase="draft",
            platform=platform,
            hardware=hardware,
            summary="No kernel yet: write a first correct, fused Triton kernel for the whole forward.",
            query=f"{op_hint} triton kernel fusion template masks",
        )
    if not result.correct:
        return _failure(result, hardware, platform, op_hint)
    return _performance(result, hardware, platform, op_hint)


def _failure(result: EvalResult, hardware: str | None, platform: str | None, op_hint: str) -> Diagnosis:
    reason = (result.reason or "no reason recorded").strip()
    evidence = [f"stage {result.stage.value}: {reason[:600]}"]
    failed_sets = [s for s in result.input_sets if not s.passed]
    for s in failed_sets[:3]:
        err = f" max_abs_err={s.max_abs_err:.3g}" if s.max_abs_err is not None else ""
        evidence.append(
            f"input set {s.name} shapes {s.shapes} dtypes {s.dtypes} failed:{err} {s.reason or ''}".strip()
        )
    if result.log_tail.strip():
        evidence.append("worker log tail: " + result.log_tail.strip()[-800:])
    if result.stage in (Stage.COMPILE, Stage.LOAD):
        kind, summary = "compile", "The parent does not compile or load: fix the error before anything else."
    elif result.stage is Stage.STATIC:
        kind, summary = (
            "correctness",
            "The parent breaks an anti-cheat rule: keep only allocation and launches.",
        )
    elif result.stage is Stage.SANDBOX:
        kind, summary = (
            "correctness",
            "The parent crashed or hit a limit: look for out-of-bounds access or runaway loops.",
        )
    elif result.stage is Stage.TIMING:
        kind, summary = (
            "correctness",
            "Timing was rejected: the reported time is impossible or timing failed.",
        )
    else:
        only_test = failed_sets and all(s.name.startswith("test") for s in failed_sets)
        summary = (
            "Wrong results only on the edge-case sets: suspect masks or sizes assumed from get_inputs()."
            if only_test
            else "Wrong results: check masks, strides, other= values and accumulation precision."
        )
        kind = "correctness"
    return Diagnosis(
        kind=kind,
        phase="debug",
        platform=platform,
        hardware=hardware,
        summary=summary,
        evidence=evidence,
        query=f"{op_hint} {kind} {result.stage.value} {reason[:200]}",
    )


def _performance(result: EvalResult, hardware: str | None, platform: str | None, op_hint: str) -> Diagnosis:
    evidence: list[str] = []
    bounds: dict[str, int] = {}
    worst_fraction: float | None = None
    latency_sets = 0
    for t in result.timings:
        line = f"{t.input_set} {t.shapes}: candidate {t.candidate.median_ms:.4g} ms, eager {t.eager.median_ms:.4g} ms"
        if t.compile is not None:
            line += f", torch.compile {t.compile.median_ms:.4g} ms"
        line += f", speedup {t.speedup:.2f}x ({t.kind.value})"
        if t.roofline is not None:
            frac = t.roofline_fraction or 0.0
            line += (
                f"; roofline {t.roofline.bound}-bound floor {t.roofline.floor_ms:.4g} ms"
                f" ({t.roofline.bytes_moved / 1e6:.3g} MB, {t.roofline.flops / 1e9:.3g} GFLOP), at {_pct(frac)} of it"
            )
            bounds[t.roofline.bound] = bounds.get(t.roofline.bound, 0) + 1
            worst_fraction = frac if worst_fraction is None else min(worst_fraction, frac)
            if t.roofline.floor_ms < 0.005:  # a few microseconds: launch overhead dominates
                latency_sets += 1
        evidence.append(line)
    if not result.timings:
        evidence.append("no timings (skipped or unavailable)")
    if latency_sets and latency_sets == len(result.timings):
        kind = "latency"
        summary = (
            "Every timed set is tiny: launch overhead and grid fill dominate; fuse launches, size the grid."
        )
    else:
        kind = max(bounds, key=lambda k: bounds[k]) if bounds else "memory"
        summary = (
            "Memory bound: reduce bytes moved and improve coalescing and parallelism."
            if kind == "memory"
            else "Compute bound: use tensor cores (tl.dot) with good tiles and pipelining."
        )
    if worst_fraction is not None:
        summary += f" Worst input set runs at {_pct(worst_fraction)} of the roofline floor."
    deferred = [] if kind == "latency" else [k for k in bounds if k != kind]
    return Diagnosis(
        kind=kind,
        phase="optimise",
        platform=platform,
        hardware=hardware,
        summary=summary,
        evidence=evidence,
        deferred=[f"{k}-bound input sets" for k in deferred],
        query=f"{op_hint} {kind} bound optimise {' '.join(t.roofline.bound for t in result.timings if t.roofline)}",
    )


def _pct(fraction: float) -> str:
    """0.42 -> "42%"; tiny fractions keep two significant digits instead of rounding to 0%."""
    return f"{fraction:.0%}" if fraction >= 0.01 else f"{fraction * 100:.2g}%"
