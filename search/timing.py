"""Measured timing on a CUDA device, do_bench-style, with the checks that keep it honest.

``measure(fn, ...)`` runs ``fn`` for ``warmup_ms`` worth of calls, then ``rep_ms`` worth (at
least ``MIN_REPS``). Before every timed call it flushes L2 by writing a buffer of at least twice
the L2 size (256 MB minimum), so no rep starts with its inputs cached; inputs larger than L2 need
no rotation, and smaller ones are evicted by the flush (we do not rotate input copies). Each rep:

    flush; start.record(); out = fn(); end.record(); torch.cuda.synchronize(); after.record()

``start -> end`` is the reported time (CUDA events around the callable only; its outputs are kept
alive until the rep ends). Host overhead is kept out of it, for candidate and baselines alike:
after the flush the stream spins (``torch.cuda._sleep``) for 1.5x the host time one call takes to
enqueue (+20 us), so the callable's kernels are queued before ``start`` fires and the events see
device time only (without this, torch.compile's wrapper overhead of 30-60 us was seen in place of
4 us kernels on the H200). The device-wide ``synchronize`` waits for every stream, so
``start -> after`` covers work left running on a side stream; minus the idle cost of a sync (
calibrated with an empty callable) it must not exceed ``start -> end`` by much, else the timing is
flagged (``integrity_issue``) and the longer time is reported. Host wall time over all reps must
be at least half the summed event times (a patched or skewed timer shows here).

After the timed reps, ``PLAIN_CHECK_REPS`` more run without the spin and from an idle device
(``flush; synchronize; start; fn(); synchronize; after``): every stream's work then falls after
``start``, so work that ran on another stream during the spin shows up. Such a call may take at
most its host enqueue time plus its event time (+25%, +20 us), else the timing is flagged and the
idle-device time is reported.

Persisting L2: before timing, the persisting-L2 limit is set to 0 and persisting lines are reset
through the CUDA driver (``cuCtxSetLimit`` / ``cuCtxResetPersistingL2Cache`` via libcuda), which
undoes an access-policy window a candidate may have set. Where libcuda cannot be loaded this is
skipped with a note (torch exposes neither call).
"""

from __future__ import annotations

import contextlib
import ctypes
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kernelevolve.search.results import TimingStats

MIN_REPS = 20
MAX_REPS = 10_000
FLUSH_MIN_BYTES = 256 * 1024 * 1024
SIDE_WORK_TOLERANCE_MS = 0.02  # sync-inclusive time may exceed the event time by this + 25%
PLAIN_CHECK_REPS = 20
HOST_GAP_FACTOR = 1.5  # the stream idles this many times one call's host time before each rep
HOST_GAP_MARGIN_MS = 0.02

# Captured at import, before any candidate code runs in this process.
_perf_counter = time.perf_counter


@dataclass
class Measurement:
    stats: TimingStats
    event_ms: list[float]
    synced_ms: list[float]  # start -> after device-wide sync, minus the idle sync cost
    wall_s: float
    integrity_issue: str | None = None
    notes: list[str] = field(default_factory=list)
    # The cross-check without the spin, from an idle device: every stream's work, host enqueue included
    plain_ms: list[float] = field(default_factory=list)
    host_ms: float = 0.0  # median host time to enqueue one call
    gap_ms: float = 0.0  # the spin before each timed rep


def _quantile(sorted_values: list[float], q: float) -> float:
    if len(sorted_values) == 1:
        return sorted_values[0]
    pos = q * (len(sorted_values) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def stats_of(times_ms: list[float]) -> TimingStats:
    ordered = sorted(times_ms)
    return TimingStats(
        median_ms=statistics.median(ordered),
        min_ms=ordered[0],
        p20_ms=_quantile(ordered, 0.2),
        p80_ms=_quantile(ordered, 0.8),
        reps=len(ordered),
    )


class L2Flusher:
    """Writes a buffer at least twice the size of L2 (and 256 MB) to evict everything cached."""

    def __init__(self, device: Any = None) -> None:
        import torch

        props = torch.cuda.get_device_properties(
            device if device is not None else torch.cuda.current_device()
        )
        l2 = int(getattr(props, "L2_cache_size", 0) or 0)
        self.nbytes = max(FLUSH_MIN_BYTES, 2 * l2)
        self.buffer = torch.empty(self.nbytes, dtype=torch.int8, device="cuda")

    def __call__(self) -> None:
        self.buffer.zero_()


def reset_persisting_l2() -> str | None:
    """Set the persisting-L2 limit to 0 and drop persisting lines; returns a note if it could not."""
    try:
        libcuda = ctypes.CDLL("libcuda.so.1")
    except OSError as exc:
        return f"persisting L2 not reset: libcuda not loadable ({exc})"
    cu_limit_persisting_l2_cache_size = 0x06
    rc1 = libcuda.cuCtxSetLimit(ctypes.c_int(cu_limit_persisting_l2_cache_size), ctypes.c_size_t(0))
    rc2 = libcuda.cuCtxResetPersistingL2Cache()
    if rc1 != 0 or rc2 != 0:
        return f"persisting L2 reset returned CUDA errors {rc1}/{rc2}"
    return None


_cycles_per_ms: float | None = None


def _host_gap(gap_ms: float, notes: list[str]) -> Callable[[], None]:
    """A callable that keeps the stream busy ~gap_ms so the host can enqueue the timed call."""
    import torch

    global _cycles_per_ms
    sleep = getattr(torch.cuda, "_sleep", None)
    if sleep is None:
        notes.append("torch.cuda._sleep unavailable: host launch overhead is not hidden from timings")
        return lambda: None
    if _cycles_per_ms is None:
        cycles = 1 << 22
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        try:
            sleep(cycles)  # first call may load the kernel
            start.record()
            sleep(cycles)
            end.record()
            torch.cuda.synchronize()
        except Exception as exc:  # noqa: BLE001 - fall back to the plain protocol
            notes.append(f"torch.cuda._sleep failed ({exc}): host launch overhead is not hidden")
            return lambda: None
        _cycles_per_ms = cycles / max(start.elapsed_time(end), 1e-3)
    n = int(gap_ms * _cycles_per_ms)
    return lambda: sleep(n)


def _sync_cost_ms(flush: L2Flusher, idle_start: bool = False) -> float:
    """Median start->after time of an empty callable: the idle cost of the sync protocol."""
    import torch

    costs = []
    for _ in range(10):
        flush()
        if idle_start:
            torch.cuda.synchronize()
        start = torch.cuda.Event(enable_timing=True)
        after = torch.cuda.Event(enable_timing=True)
        start.record()
        torch.cuda.synchronize()
        after.record()
        torch.cuda.synchronize()
        costs.append(start.elapsed_time(after))
    return statistics.median(costs)


def _plain_check(fn: Callable[[], Any], flush: L2Flusher, reps: int) -> tuple[list[float], list[float]]:
    """Time ``fn`` from an idle device to an idle device, with no spin ahead of it.

    The spin that hides host overhead also leaves room for work on another stream to run before
    ``start`` fires, unseen (found on the H200: a side-stream copy timed at 1 us). Here the device
    is idle when ``start`` is recorded, so everything ``fn`` enqueues, on any stream, runs after it.
    Returns each call's idle-to-idle time and its host enqueue time, measured in the same call.
    """
    import torch

    cost = _sync_cost_ms(flush, idle_start=True)
    times, host = [], []
    for _ in range(reps):
        flush()
        torch.cuda.synchronize()
        start = torch.cuda.Event(enable_timing=True)
        after = torch.cuda.Event(enable_timing=True)
        start.record()
        t0 = _perf_counter()
        out = fn()
        host.append((_perf_counter() - t0) * 1e3)
        torch.cuda.synchronize()
        after.record()
        torch.cuda.synchronize()
        times.append(max(0.0, start.elapsed_time(after) - cost))
        del out
    return times, host


def measure(
    fn: Callable[[], Any],
    *,
    warmup_ms: float = 25.0,
    rep_ms: float = 100.0,
    flush: L2Flusher | None = None,
    min_reps: int = MIN_REPS,
) -> Measurement:
    import torch

    notes: list[str] = []
    flush = flush or L2Flusher()
    note = reset_persisting_l2()
    if note:
        notes.append(note)

    # Estimate one call's time (5 calls), then size warm-up and reps from it, as do_bench does.
    torch.cuda.synchronize()
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    host_ms = []
    start.record()
    for _ in range(5):
        flush()
        t0 = _perf_counter()
        fn()
        host_ms.append((_perf_counter() - t0) * 1e3)
    end.record()
    torch.cuda.synchronize()
    estimate = max(start.elapsed_time(end) / 5, 1e-3)
    gap_ms = statistics.median(host_ms) * HOST_GAP_FACTOR + HOST_GAP_MARGIN_MS
    hide_host = _host_gap(gap_ms, notes)
    n_warmup = max(1, int(warmup_ms / estimate))
    n_reps = min(MAX_REPS, max(min_reps, int(rep_ms / (estimate + gap_ms))))
    for _ in range(n_warmup):
        fn()
    torch.cuda.synchronize()
    sync_cost = _sync_cost_ms(flush)

    starts = [torch.cuda.Event(enable_timing=True) for _ in range(n_reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(n_reps)]
    afters = [torch.cuda.Event(enable_timing=True) for _ in range(n_reps)]
    wall0 = _perf_counter()
    for i in range(n_reps):
        flush()
        hide_host()
        starts[i].record()
        out = fn()
        ends[i].record()
        torch.cuda.synchronize()  # device-wide: side streams included
        afters[i].record()
        del out
    torch.cuda.synchronize()
    wall_s = _perf_counter() - wall0

    event_ms = [s.elapsed_time(e) for s, e in zip(starts, ends, strict=True)]
    synced_ms = [max(0.0, s.elapsed_time(a) - sync_cost) for s, a in zip(starts, afters, strict=True)]
    host_med = statistics.median(host_ms)
    plain_ms, plain_host_ms = _plain_check(fn, flush, min(n_reps, PLAIN_CHECK_REPS))
    issue = _integrity(event_ms, synced_ms, wall_s) or _unseen_work(event_ms, plain_ms, plain_host_ms)
    reported = event_ms
    if issue is not None:
        worst = statistics.median(plain_ms)
        reported = [max(e, s, worst) for e, s in zip(event_ms, synced_ms, strict=True)]
    return Measurement(
        stats_of(reported), event_ms, synced_ms, wall_s, issue, notes, plain_ms, host_med, gap_ms
    )


def _integrity(event_ms: list[float], synced_ms: list[float], wall_s: float) -> str | None:
    event_med = statistics.median(event_ms)
    synced_med = statistics.median(synced_ms)
    if synced_med > event_med * 1.25 + SIDE_WORK_TOLERANCE_MS:
        return (
            f"work continued after the timed call returned: {synced_med:.4f} ms until the device was "
            f"idle against {event_med:.4f} ms on the timing stream (side stream or deferred work?)"
        )
    if wall_s * 1e3 < 0.5 * sum(event_ms):
        return (
            f"GPU event times ({sum(event_ms):.3f} ms in all) exceed twice the host wall time "
            f"({wall_s * 1e3:.3f} ms): the timer cannot be trusted"
        )
    return None


def _unseen_work(event_ms: list[float], plain_ms: list[float], plain_host_ms: list[float]) -> str | None:
    """From an idle device, a call's time beyond its own host enqueue time is device work, which
    the timing stream's events must have seen."""
    if not plain_ms:
        return None
    event_med = statistics.median(event_ms)
    beyond_host = statistics.median(max(0.0, p - h) for p, h in zip(plain_ms, plain_host_ms, strict=True))
    if beyond_host > event_med * 1.25 + SIDE_WORK_TOLERANCE_MS:
        return (
            f"work the timing stream did not see: from an idle device a call keeps the GPU busy "
            f"{beyond_host:.4f} ms after it was enqueued, against {event_med:.4f} ms on the timing "
            "stream (side stream running ahead of the timed region?)"
        )
    return None


def compile_module(module: Any, mode: str | None) -> tuple[Any | None, str | None]:
    """torch.compile(module, mode=...) or (None, reason) when torch.compile is unavailable."""
    import torch

    try:
        return torch.compile(module, mode=mode), None
    except Exception as exc:  # noqa: BLE001 - a missing compiler skips the baseline, not the candidate
        return None, f"torch.compile(mode={mode!r}) unavailable: {type(exc).__name__}: {exc}"


def warm(fn: Callable[[], Any], times: int = 3) -> str | None:
    """Call fn a few times (compiles happen here, outside any timed region); reason on failure."""
    import torch

    try:
        for _ in range(times):
            fn()
        torch.cuda.synchronize()
    except Exception as exc:  # noqa: BLE001 - reported as a skipped baseline
        return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    return None


@contextlib.contextmanager
def no_grad() -> Any:
    import torch

    with torch.no_grad():
        yield
