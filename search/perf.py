"""Timing of one input set, as the worker calls it: measured on CUDA, modelled on the CPU.

``time_input_set`` returns a ``ShapeTiming`` with the candidate, eager and torch.compile
baselines and the roofline floor. ``floor_violation`` says why a timing must be rejected (a time
below the physical floor, or a failed timing cross-check), or None. ``TimingUnavailable`` is raised
when no honest number can be produced (e.g. the interpreter hooks are missing): the worker records
its message as a warning and reports no timing for the set, never a made-up one.
"""

from __future__ import annotations

import weakref
from collections import Counter
from typing import Any

from kernelevolve.knowledge.hardware import HardwareSpec, load_hardware, match_device
from kernelevolve.search import gpu_lock
from kernelevolve.search.config import EvalConfig
from kernelevolve.search.results import Roofline, ShapeTiming, TimingKind, TimingStats
from kernelevolve.search.roofline import roofline_for, trace_reference

FLOOR_SLACK = 0.10  # measured times may dip this far below the hard floor (noise, clock boost)

# torch.compile'd reference per module and mode, for this process (weak: a module id never aliases)
_compiled: weakref.WeakKeyDictionary[Any, dict[str | None, Any]] = weakref.WeakKeyDictionary()


class TimingUnavailable(RuntimeError):
    """No trustworthy timing can be produced for this input set; the message says why."""


def time_input_set(
    name: str,
    candidate: Any,
    reference: Any,
    inputs: list[Any],
    config: EvalConfig,
    device: str,
) -> ShapeTiming:
    if device.startswith("cuda"):
        return _measured(name, candidate, reference, inputs, config)
    return _modelled(name, candidate, reference, inputs, config)


def floor_violation(t: ShapeTiming) -> str | None:
    """Why this timing cannot be trusted, or None. Modelled timings never fall below the floor."""
    if t.integrity_issue:
        return f"timing cross-check failed: {t.integrity_issue}"
    if t.kind is not TimingKind.MEASURED or t.roofline is None:
        return None
    floor = t.roofline.hard_floor_ms if t.roofline.hard_floor_ms is not None else t.roofline.floor_ms
    candidate = t.candidate.median_ms
    if floor > 0 and candidate < floor * (1.0 - FLOOR_SLACK):
        return (
            f"candidate {candidate:.4g} ms is below the roofline floor {floor:.4g} ms for "
            f"{_fmt_bytes(t.roofline.bytes_moved)} and {t.roofline.flops:.3g} FLOP on "
            f"{t.roofline.hardware}: timing cannot be trusted"
        )
    return None


def _fmt_bytes(n: int) -> str:
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n} B"


def _shapes(inputs: list[Any]) -> list[list[int]]:
    return [list(x.shape) for x in inputs if hasattr(x, "shape")]


def _constant_stats(ms: float) -> TimingStats:
    return TimingStats(median_ms=ms, min_ms=ms, p20_ms=ms, p80_ms=ms, reps=1)


# -- CPU: modelled --------------------------------------------------------------------------------
def _modelled(
    name: str, candidate: Any, reference: Any, inputs: list[Any], config: EvalConfig
) -> ShapeTiming:
    import torch
    from kernelevolve.search.modelled import (
        CountingUnavailable,
        count_launches,
        price_candidate,
        price_compile,
        price_eager,
    )

    hw = load_hardware(config.hardware)
    try:
        with torch.no_grad(), count_launches() as log:
            candidate(*inputs)
    except CountingUnavailable as exc:
        raise TimingUnavailable(f"no modelled timing: {exc}") from exc
    if not log.launches:
        raise TimingUnavailable("no modelled timing: no Triton launch was counted in the interpreter")
    trace, _ = trace_reference(reference, inputs)
    roofline = roofline_for(trace, hw)
    floor = roofline.floor_ms
    cand_ms, prices = price_candidate(log, hw)
    bounds = Counter(p.bound for p in prices)
    notes = [
        f"modelled on {hw.name}: {len(prices)} launch(es), bound by "
        + ", ".join(f"{b}" if n == 1 else f"{b} x{n}" for b, n in bounds.most_common())
    ]
    eager_ms = price_eager(trace, hw)
    timing = ShapeTiming(
        input_set=name,
        shapes=_shapes(inputs),
        kind=TimingKind.MODELLED,
        candidate=_constant_stats(max(cand_ms, floor)),
        eager=_constant_stats(max(eager_ms, floor)),
        compile=_constant_stats(max(price_compile(trace, hw), floor)) if config.compile_baseline else None,
        roofline=roofline,
        notes=notes,
    )
    return timing


# -- CUDA: measured -------------------------------------------------------------------------------
def _hardware_for_device() -> HardwareSpec | None:
    import torch

    return match_device(torch.cuda.get_device_name())


def _measured(
    name: str, candidate: Any, reference: Any, inputs: list[Any], config: EvalConfig
) -> ShapeTiming:
    import torch
    from kernelevolve.search import timing

    notes: list[str] = []
    gpu = gpu_lock.current()
    with gpu.shared():
        flush = timing.L2Flusher()
    with torch.no_grad():
        with gpu.exclusive():
            cand = timing.measure(
                lambda: candidate(*inputs), warmup_ms=config.warmup_ms, rep_ms=config.rep_ms, flush=flush
            )
        notes += cand.notes
        with gpu.exclusive():
            eager = timing.measure(
                lambda: reference(*inputs), warmup_ms=config.warmup_ms, rep_ms=config.rep_ms, flush=flush
            )
        compiled = (
            _compiled_baseline(reference, inputs, None, config, flush, notes)
            if config.compile_baseline
            else None
        )
        autotuned = (
            _compiled_baseline(reference, inputs, "max-autotune", config, flush, notes)
            if config.max_autotune_baseline
            else None
        )
    roofline: Roofline | None = None
    hw = _hardware_for_device()
    if hw is None:
        notes.append(f"no knowledge/hardware entry matches {torch.cuda.get_device_name()!r}: no roofline")
    else:
        with gpu.shared():
            trace, _ = trace_reference(reference, inputs)
        roofline = roofline_for(trace, hw)
    return ShapeTiming(
        input_set=name,
        shapes=_shapes(inputs),
        kind=TimingKind.MEASURED,
        candidate=cand.stats,
        eager=eager.stats,
        compile=compiled,
        compile_max_autotune=autotuned,
        roofline=roofline,
        notes=notes,
        integrity_issue=cand.integrity_issue,
    )


def _compiled_baseline(
    reference: Any, inputs: list[Any], mode: str | None, config: EvalConfig, flush: Any, notes: list[str]
) -> TimingStats | None:
    from kernelevolve.search import timing

    per_mode = _compiled.setdefault(reference, {})
    module = per_mode.get(mode)
    if module is None:
        module, reason = timing.compile_module(reference, mode)
        if module is None:
            notes.append(f"torch.compile baseline skipped: {reason}")
            return None
        per_mode[mode] = module
    gpu = gpu_lock.current()
    # Inductor compiles on the first call, which also runs on the GPU: shared (max-autotune's own
    # benchmarking of choices produces numbers, so that mode warms with the GPU to itself).
    with gpu.exclusive() if mode == "max-autotune" else gpu.shared():
        failure = timing.warm(lambda: module(*inputs))  # compile time is spent here, untimed
    if failure is not None:
        notes.append(f"torch.compile(mode={mode!r}) baseline skipped: {failure}")
        return None
    with gpu.exclusive():
        result = timing.measure(
            lambda: module(*inputs), warmup_ms=config.warmup_ms, rep_ms=config.rep_ms, flush=flush
        )
    if result.integrity_issue:
        notes.append(f"torch.compile(mode={mode!r}) timing flagged: {result.integrity_issue}")
    return result.stats
