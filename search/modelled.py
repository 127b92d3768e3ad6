"""Modelled GPU timing on the CPU: count what a kernel does in Triton's interpreter, price it.

While ``TRITON_INTERPRET=1`` runs a candidate, ``count_launches()`` hooks the interpreter and
records per launch: the grid, ``num_warps``/``num_stages``, bytes loaded and stored by masked-in
lanes, the distinct bytes and 32-byte sectors touched, ``tl.dot`` FLOPs (2*M*N*K) and lane
operations (every element of every arithmetic op, masked lanes included, as on a GPU).

``price_launch`` turns one launch into time on a ``HardwareSpec``::

    time = launch_overhead + max(unique_sector_bytes / (HBM_bw * u_mem),
                                 sector_bytes       / (L2_bw  * u_mem),
                                 dot_flops          / (tensor_rate * u_sm),
                                 lane_ops           / (alu_rate * u_sm))

with utilisations from the grid: programs resident per SM (limited by warps, blocks and the
shared memory the dot tiles need), waves = ceil(programs / (SMs * resident)), the fraction of SMs
an average wave fills, and for memory also Little's law: the bytes in flight per SM (resident
programs x bytes per memory instruction x 2 independent accesses) against bandwidth-per-SM x
``MEMORY_LATENCY_S``. So a grid that leaves SMs idle, or blocks too small to keep enough bytes in
flight, model slower, as on a GPU. docs/timing.md lists what the model does not see.

Baselines are priced from a trace of the reference (``roofline.trace_reference``): eager = one
launch per ATen op that launches a kernel; torch.compile = one fused pass over the graph's inputs
and outputs plus one launch per matmul-like op. No modelled time is ever below the roofline floor.
"""

from __future__ import annotations

import contextlib
import math
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from kernelevolve.knowledge.hardware import HardwareSpec
from kernelevolve.search.roofline import ReferenceTrace

SECTOR_BYTES = 32  # L2 <-> SM transfers move 32-byte sectors
MEMORY_LATENCY_S = 0.7e-6  # loaded HBM latency assumed for Little's law (Hopper: ~0.6-0.8 us)
MEMORY_PARALLELISM = 2  # independent memory instructions a program keeps in flight
WARPS_TO_FEED_SM = 4  # one warp per SM sub-partition keeps its tensor/FMA pipes busy
_SPLIT_K_BYTES = 64 * 1024  # library GEMMs split K to give each program at least this much input
_COMPACT_AT = 4_000_000  # addresses buffered per launch before de-duplicating


class CountingUnavailable(RuntimeError):
    """The interpreter lacks a hook this module needs (a Triton version with other names)."""


@dataclass
class LaunchCount:
    kernel: str
    num_warps: int = 4
    num_stages: int = 3
    grid: tuple[int, int, int] = (1, 1, 1)
    loaded_bytes: int = 0  # masked-in lanes x element size
    stored_bytes: int = 0
    sector_bytes: int = 0  # per memory instruction: distinct 32-byte sectors x 32 (L2 traffic)
    mem_instructions: int = 0  # memory instructions executed over all programs
    dot_flops: int = 0
    dot_dtype: str = ""
    dot_tile_bytes: int = 0  # largest a+b operand tile of one dot (for the shared-memory estimate)
    lane_ops: int = 0
    unique_bytes: int = 0  # filled by finish()
    unique_sector_bytes: int = 0
    _addrs: dict[int, list[np.ndarray]] = field(default_factory=dict, repr=False)
    _buffered: int = field(default=0, repr=False)

    @property
    def programs(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]

    @property
    def total_bytes(self) -> int:
        return self.loaded_bytes + self.stored_bytes

    def add_access(self, addrs: np.ndarray, elem: int, store: bool) -> None:
        n = int(addrs.size)
        if n == 0:
            return
        if store:
            self.stored_bytes += n * elem
        else:
            self.loaded_bytes += n * elem
        self.mem_instructions += 1
        self.sector_bytes += int(np.unique(addrs // SECTOR_BYTES).size) * SECTOR_BYTES
        self._addrs.setdefault(elem, []).append(addrs.astype(np.uint64, copy=False))
        self._buffered += n
        if self._buffered > _COMPACT_AT:
            self._compact()

    def _compact(self) -> None:
        for elem, chunks in self._addrs.items():
            self._addrs[elem] = [np.unique(np.concatenate(chunks))]
        self._buffered = sum(c[0].size for c in self._addrs.values())

    def finish(self) -> None:
        self._compact()
        unique_bytes = 0
        sectors: list[np.ndarray] = []
        for elem, chunks in self._addrs.items():
            addrs = chunks[0]
            unique_bytes += int(addrs.size) * elem
            sectors.append(addrs // SECTOR_BYTES)
            if elem > SECTOR_BYTES:  # wide elements span several sectors
                sectors.append((addrs + elem - 1) // SECTOR_BYTES)
        self.unique_bytes = unique_bytes
        self.unique_sector_bytes = (
            int(np.unique(np.concatenate(sectors)).size) * SECTOR_BYTES if sectors else 0
        )
        self._addrs = {}
        self._buffered = 0


@dataclass
class LaunchLog:
    launches: list[LaunchCount] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


# -- hooks ----------------------------------------------------------------------------------------
_lock = threading.RLock()  # re-entrant: modelled autotuning counts inside a counted run


@contextlib.contextmanager
def count_launches() -> Iterator[LaunchLog]:
    """Hook Triton's interpreter for the duration; yields the log of launches counted.

    Raises CountingUnavailable (before running anything) if the interpreter's hooks are missing.
    """
    try:
        from triton.runtime import interpreter as interp
        from triton.runtime.autotuner import Autotuner

        builder = interp.interpreter_builder
        run_cls = interp.InterpretedFunction
        needed = ("create_masked_load", "create_masked_store", "create_dot", "set_grid_dim", "binary_op")
        missing = [n for n in needed if not hasattr(builder, n)]
        if missing or not hasattr(run_cls, "run"):
            raise CountingUnavailable(f"Triton interpreter lacks {', '.join(missing) or 'run'}")
    except ImportError as exc:
        raise CountingUnavailable(f"Triton interpreter not importable: {exc}") from exc

    log = LaunchLog()
    state: dict[str, Any] = {"current": None, "suspended": 0}

    def current() -> LaunchCount | None:
        return None if state["suspended"] else state["current"]

    def elem_size(ptrs: Any) -> int:
        return max(1, int(ptrs.get_element_ty().primitive_bitwidth) // 8)

    def masked(ptrs: Any, mask: Any) -> np.ndarray:
        data = np.asarray(ptrs.data)
        if mask is None:
            return data.reshape(-1)
        m = np.broadcast_to(np.asarray(mask.data, dtype=bool), data.shape)
        return data[m]

    orig = {n: getattr(builder, n) for n in needed}
    extra_names = ("unary_op", "ternary_op", "create_fma", "create_atomic_rmw", "create_atomic_cas")
    orig.update({n: getattr(builder, n) for n in extra_names if hasattr(builder, n)})

    def masked_load(ptrs: Any, mask: Any, other: Any, *a: Any, **k: Any) -> Any:
        rec = current()
        if rec is not None:
            rec.add_access(masked(ptrs, mask), elem_size(ptrs), store=False)
        return orig["create_masked_load"](ptrs, mask, other, *a, **k)

    def masked_store(ptrs: Any, value: Any, mask: Any, *a: Any, **k: Any) -> Any:
        rec = current()
        if rec is not None:
            rec.add_access(masked(ptrs, mask), elem_size(ptrs), store=True)
        return orig["create_masked_store"](ptrs, value, mask, *a, **k)

    def atomic(name: str) -> Any:
        def hook(*a: Any, **k: Any) -> Any:
            rec = current()
            if rec is not None:
                ptr = a[1] if name == "create_atomic_rmw" else a[0]
                mask = a[3] if name == "create_atomic_rmw" and len(a) > 3 else None
                addrs = masked(ptr, mask)
                rec.add_access(addrs, elem_size(ptr), store=False)
                rec.add_access(addrs, elem_size(ptr), store=True)
            return orig[name](*a, **k)

        return hook

    def dot(a: Any, b: Any, d: Any, *rest: Any, **k: Any) -> Any:
        rec = current()
        if rec is not None:
            ash, bsh = np.shape(a.data), np.shape(b.data)
            m, kk = ash[-2], ash[-1]
            n = bsh[-1]
            batch = int(np.prod(ash[:-2])) if len(ash) > 2 else 1
            rec.dot_flops += 2 * batch * m * n * kk
            rec.dot_dtype = rec.dot_dtype or _tl_dtype_name(a.dtype)
            tile = (int(np.asarray(a.data).nbytes) + int(np.asarray(b.data).nbytes)) // max(1, batch)
            rec.dot_tile_bytes = max(rec.dot_tile_bytes, tile)
        return orig["create_dot"](a, b, d, *rest, **k)

    def lanes(name: str, extra: int = 1) -> Any:
        def hook(*a: Any, **k: Any) -> Any:
            out = orig[name](*a, **k)
            rec = current()
            if rec is not None:
                with contextlib.suppress(Exception):
                    rec.lane_ops += extra * int(np.size(out.data))
            return out

        return hook

    def set_grid_dim(nx: int, ny: int, nz: int) -> Any:
        rec = state["current"]
        if rec is not None:
            rec.grid = (int(nx), int(ny), int(nz))
        return orig["set_grid_dim"](nx, ny, nz)

    orig_run = run_cls.run

    def run(self: Any, *args: Any, grid: Any, warmup: Any, **kwargs: Any) -> Any:
        if warmup or state["suspended"]:
            return orig_run(self, *args, grid=grid, warmup=warmup, **kwargs)
        name = getattr(getattr(self, "fn", None), "__name__", "kernel")
        rec = LaunchCount(
            kernel=name,
            num_warps=int(kwargs.get("num_warps") or 4),
            num_stages=int(kwargs.get("num_stages") or 3),
        )
        previous, state["current"] = state["current"], rec
        try:
            return orig_run(self, *args, grid=grid, warmup=warmup, **kwargs)
        finally:
            state["current"] = previous
            rec.finish()
            log.launches.append(rec)

    orig_bench = Autotuner._bench

    def bench(self: Any, *args: Any, **kwargs: Any) -> Any:
        state["suspended"] += 1  # autotuning trials are not part of the timed call
        try:
            return orig_bench(self, *args, **kwargs)
        finally:
            state["suspended"] -= 1

    patches: dict[str, Any] = {
        "create_masked_load": masked_load,
        "create_masked_store": masked_store,
        "create_dot": dot,
        "set_grid_dim": set_grid_dim,
        "binary_op": lanes("binary_op"),
    }
    if "unary_op" in orig:
        patches["unary_op"] = lanes("unary_op")
    if "ternary_op" in orig:
        patches["ternary_op"] = lanes("ternary_op")
    if "create_fma" in orig:
        patches["create_fma"] = lanes("create_fma", extra=2)
    for name in ("create_atomic_rmw", "create_atomic_cas"):
        if name in orig:
            patches[name] = atomic(name)

    with _lock:
        shadowed = {n: vars(builder)[n] for n in patches if n in vars(builder)}  # an outer count's hooks
        for n, fn in patches.items():
            setattr(builder, n, fn)  # instance attributes shadow the class's methods
        run_cls.run = run  # type: ignore[method-assign]
        Autotuner._bench = bench  # type: ignore[method-assign]
        try:
            yield log
        finally:
            for n in patches:
                if n in shadowed:
                    setattr(builder, n, shadowed[n])
                else:
                    with contextlib.suppress(AttributeError):
                        delattr(builder, n)
            run_cls.run = orig_run  # type: ignore[method-assign]
            Autotuner._bench = orig_bench  # type: ignore[method-assign]
    if not log.launches:
        log.warnings.append("no Triton launch was counted")


def install_modelled_autotuning(hardware: str) -> bool:
    """Make ``@triton.autotune`` pick configs by modelled time on ``hardware`` (CPU interpreter).

    Without a GPU driver, Triton's autotuner cannot benchmark (``0 active drivers``), so any
    candidate with several configs fails in the interpreter. Call this once in a CPU worker before
    the candidate runs: each config is then run once under ``count_launches`` and priced, and the
    autotuner keeps the config a real ``hardware`` GPU would most likely prefer. Returns False when
    this Triton has no ``Autotuner._bench`` to replace.
    """
    from kernelevolve.knowledge.hardware import load_hardware

    try:
        from triton.runtime.autotuner import Autotuner
    except ImportError:
        return False
    if not hasattr(Autotuner, "_bench"):
        return False
    if getattr(Autotuner._bench, "_kernelevolve_modelled", False):
        return True
    hw = load_hardware(hardware)

    def modelled_bench(self: Any, *args: Any, config: Any, **meta: Any) -> list[float]:
        current = dict(meta, **config.all_kwargs())
        full_nargs = {**self.nargs, **current}
        try:
            if config.pre_hook:
                config.pre_hook(full_nargs)
            self.pre_hook(full_nargs)
            with count_launches() as log:
                self.fn.run(*args, **current)
            self.post_hook(full_nargs, exception=None)
        except Exception:  # noqa: BLE001 - a config that cannot run loses, as on a GPU
            return [float("inf")] * 3
        ms, _ = price_candidate(log, hw)
        return [ms, ms, ms]

    modelled_bench._kernelevolve_modelled = True  # type: ignore[attr-defined]
    Autotuner._bench = modelled_bench  # type: ignore[method-assign]
    return True


def _tl_dtype_name(dtype: Any) -> str:
    text = str(getattr(dtype, "scalar", dtype))
    return {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}.get(text, text)


# -- pricing --------------------------------------------------------------------------------------
@dataclass
class LaunchPrice:
    time_ms: float
    bound: str  # "hbm", "l2", "tensor", "alu" or "launch"
    u_mem: float
    u_sm: float
    waves: int


def _resident_per_sm(hw: HardwareSpec, num_warps: int, smem_per_program: int) -> int:
    resident = max(1, min(hw.max_blocks_per_sm, hw.max_warps_per_sm // max(1, num_warps)))
    if smem_per_program > 0:
        resident = max(1, min(resident, hw.smem_per_sm // smem_per_program))
    return resident


def utilisation(
    hw: HardwareSpec, concurrent: float, num_warps: int, bytes_per_instruction: float
) -> tuple[float, float]:
    """(u_mem, u_sm) while ``concurrent`` programs of ``num_warps`` warps run at once."""
    concurrent = max(1.0, concurrent)
    active_sms = min(float(hw.sm_count), concurrent)
    per_sm = concurrent / active_sms
    fill = active_sms / hw.sm_count
    in_flight = per_sm * bytes_per_instruction * MEMORY_PARALLELISM
    needed = hw.bandwidth_gbps() * 1e9 / hw.sm_count * MEMORY_LATENCY_S
    u_mem = fill * min(1.0, in_flight / needed)
    u_sm = fill * min(1.0, per_sm * max(1, num_warps) / WARPS_TO_FEED_SM)
    return max(u_mem, 1e-9), max(u_sm, 1e-9)


def price_launch(
    hw: HardwareSpec,
    *,
    hbm_bytes: float,
    l2_bytes: float,
    dot_flops: float = 0.0,
    dot_dtype: str = "float32",
    lane_ops: float = 0.0,
    programs: int = 1,
    num_warps: int = 4,
    bytes_per_instruction: float = 4096.0,
    smem_per_program: int = 0,
) -> LaunchPrice:
    """Price one launch whose work is spread evenly over ``programs``.

    Programs run in waves of ``sm_count * resident`` at a time; full waves and the partial last
    wave are each priced at their own utilisation, so a last wave of a few programs is a tail.
    """
    programs = max(1, programs)
    slots = hw.sm_count * _resident_per_sm(hw, num_warps, smem_per_program)
    full_waves, remainder = divmod(programs, slots)
    ideal = {
        "hbm": hbm_bytes / (hw.bandwidth_gbps() * 1e9),
        "l2": l2_bytes / (hw.l2_gbps * 1e9),
        "tensor": dot_flops / (hw.matmul_tflops(dot_dtype or "float32") * 1e12),
        "alu": lane_ops / (hw.elementwise_tflops("fp32") / 2 * 1e12),
    }
    terms = dict.fromkeys(ideal, 0.0)
    for concurrent, share in ((slots, full_waves * slots / programs), (remainder, remainder / programs)):
        if share <= 0:
            continue
        u_mem, u_sm = utilisation(hw, concurrent, num_warps, bytes_per_instruction)
        for key, value in ideal.items():
            terms[key] += share * value / (u_mem if key in ("hbm", "l2") else u_sm)
    bound = max(terms, key=lambda k: terms[k])
    busy_s = terms[bound]
    overhead_s = hw.launch_overhead_us * 1e-6
    mem_ideal = max(ideal["hbm"], ideal["l2"])
    sm_ideal = max(ideal["tensor"], ideal["alu"])
    mem_time = max(terms["hbm"], terms["l2"])
    sm_time = max(terms["tensor"], terms["alu"])
    return LaunchPrice(
        time_ms=(overhead_s + busy_s) * 1e3,
        bound=bound if busy_s > overhead_s else "launch",
        u_mem=mem_ideal / mem_time if mem_time > 0 else 1.0,
        u_sm=sm_ideal / sm_time if sm_time > 0 else 1.0,
        waves=full_waves + (1 if remainder else 0),
    )


def price_candidate(log: LaunchLog, hw: HardwareSpec) -> tuple[float, list[LaunchPrice]]:
    prices = []
    for rec in log.launches:
        # in flight is counted in sectors: a 4-byte load still moves a 32-byte sector
        per_instruction = rec.sector_bytes / rec.mem_instructions if rec.mem_instructions else 0.0
        smem = rec.num_stages * rec.dot_tile_bytes  # software-pipelined operand tiles
        prices.append(
            price_launch(
                hw,
                hbm_bytes=rec.unique_sector_bytes,
                l2_bytes=rec.sector_bytes,
                dot_flops=rec.dot_flops,
                dot_dtype=rec.dot_dtype,
                lane_ops=rec.lane_ops,
                programs=rec.programs,
                num_warps=rec.num_warps,
                bytes_per_instruction=per_instruction,
                smem_per_program=smem,
            )
        )
    return sum(p.time_ms for p in prices), prices


def _split_traffic(trace: ReferenceTrace, hw: HardwareSpec, uses: list[Any]) -> tuple[int, int]:
    """(hbm, l2-only) bytes of an op's reads or writes: small intermediates stay in L2."""
    hbm = l2 = 0
    for use in uses:
        nbytes = -(-use.nbytes // SECTOR_BYTES) * SECTOR_BYTES  # whole sectors, as the candidate's
        resident = use.key not in trace.leaf_keys and use.key not in trace.output_keys
        if resident and nbytes <= hw.l2_bytes // 2:
            l2 += nbytes
        else:
            hbm += nbytes
    return hbm, l2


def price_eager(trace: ReferenceTrace, hw: HardwareSpec) -> float:
    """One launch per ATen op that launches a kernel, each priced on its own traffic and FLOPs."""
    total = 0.0
    for op in trace.ops:
        if not op.launches:
            continue
        r_hbm, r_l2 = _split_traffic(trace, hw, op.reads)
        w_hbm, w_l2 = _split_traffic(trace, hw, op.writes)
        hbm = r_hbm + w_hbm
        elem = _elem_size(op.dtype)
        out_elems = max(1, sum(u.nbytes for u in op.writes) // elem)
        in_bytes = sum(u.nbytes for u in op.reads)
        if op.flops:  # a library GEMM: 128x128 output tiles (split-K when the output is small)
            programs = max(math.ceil(out_elems / (128 * 128)), math.ceil(in_bytes / _SPLIT_K_BYTES))
            warps, per_instruction = 8, float(128 * 64 * elem)
        else:  # an ATen element-wise/reduction kernel: ~1024 elements of its larger side per block
            programs, warps = math.ceil(max(out_elems, in_bytes // elem) / 1024), 4
            accesses = max(1, len(op.reads) + len(op.writes))
            per_instruction = _per_instruction(hbm + r_l2 + w_l2, programs * accesses)
        total += price_launch(
            hw,
            hbm_bytes=hbm,
            l2_bytes=hbm + r_l2 + w_l2,
            dot_flops=op.flops,
            dot_dtype=op.dtype,
            programs=programs,
            num_warps=warps,
            bytes_per_instruction=per_instruction,
        ).time_ms
    return total


def _per_instruction(nbytes: float, instructions: int) -> float:
    """Bytes one memory instruction moves, between a 32-byte sector and 4 KB (1024 fp32 lanes)."""
    return min(4096.0, max(float(SECTOR_BYTES), nbytes / max(1, instructions)))


def _elem_size(dtype: str) -> int:
    return {"float64": 8, "float16": 2, "bfloat16": 2, "int8": 1, "uint8": 1, "bool": 1}.get(
        dtype, 1 if dtype.startswith("float8") else 4
    )


def price_compile(trace: ReferenceTrace, hw: HardwareSpec) -> float:
    """One fused pass over the graph's inputs and outputs, plus one launch per matmul-like op."""
    matmuls = trace.matmul_ops
    if not any(op.launches and not op.flops for op in trace.ops):
        # nothing to fuse: Inductor calls the library matmuls as they are
        return price_eager(trace, hw)
    programs = math.ceil(max(1, trace.bytes_moved // 4) / 1024)
    io_bytes = trace.bytes_moved + SECTOR_BYTES * trace.io_tensors  # each tensor's partial sector
    fused = price_launch(
        hw,
        hbm_bytes=io_bytes,
        l2_bytes=io_bytes,
        programs=programs,
        bytes_per_instruction=_per_instruction(io_bytes, programs * max(1, trace.io_tensors)),
    ).time_ms
    for op in matmuls:
        elems = max(1, sum(u.nbytes for u in op.writes) // _elem_size(op.dtype))
        in_bytes = sum(u.nbytes for u in op.reads)
        fused += price_launch(
            hw,
            hbm_bytes=0,  # its operands are counted in the fused pass's traffic
            l2_bytes=0,
            dot_flops=op.flops,
            dot_dtype=op.dtype,
            programs=max(math.ceil(elems / (128 * 128)), math.ceil(in_bytes / _SPLIT_K_BYTES)),
            num_warps=8,
        ).time_ms
    return fused
