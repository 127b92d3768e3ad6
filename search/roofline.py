"""The speed-of-light floor of one input set, from one traced run of the reference.

``trace_reference`` runs the reference ``Model`` once under a ``TorchDispatchMode`` that records
every ATen op it launches (bytes it reads and writes, FLOPs from torch's flop registry) and under
``FlopCounterMode`` for the total FLOPs. ``roofline_for`` turns the trace into a ``Roofline``.

What the floor counts (it must stay a lower bound on any honest kernel):
- bytes: every leaf tensor (problem input, parameter, buffer) the reference reads, once, and every
  output, once. A leaf read only through a view counts the view's footprint (``x[:, :8]`` reads
  8 columns, not ``x``); broadcast (stride-0) dims count once. Tables read through a gather
  (embedding, embedding_bag, index_select) count only the distinct rows the indices name; other
  gathers (``gather``, ``index``, ``take``) count nothing for the table. Intermediates count
  nothing: a fused kernel never writes them.
- FLOPs: what ``FlopCounterMode`` counts (matmuls, convolutions, attention); element-wise
  arithmetic is not counted (0), which only lowers the floor.
- floor = max(bytes / HBM bandwidth, sum over matmul-like ops of flops / tensor-core rate of
  its dtype), with fp32 matmuls priced at the tf32 rate.

``floor_ms`` uses the ceilings of ``knowledge/hardware`` (measured where known): it is the
roofline users see, and ``ShapeTiming.roofline_fraction`` divides by it. ``hard_floor_ms`` is the
physical bound used to reject timings: datasheet peaks only, and outputs that fit in L2 are not
charged to HBM (a kernel's writes may still sit in L2 when its end event fires).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any

import torch
from kernelevolve.knowledge.hardware import HardwareSpec
from kernelevolve.search.results import Roofline
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

# Ops whose first argument is a table read only at the rows the indices name.
_ROW_GATHERS = {"embedding", "embedding_bag", "_embedding_bag", "_embedding_bag_forward_only", "index_select"}
# Ops whose first argument is read only where the indices point (lower bound: nothing).
_SPARSE_GATHERS = {"gather", "index", "_unsafe_index", "take", "index_put", "_index_put_impl"}
# Ops that allocate without reading anything and launch no kernel of their own.
_FREE_OPS = {"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "detach", "lift_fresh"}


@dataclass
class TensorUse:
    key: tuple[int, int]  # (storage address, generation): one storage's life
    nbytes: int  # footprint of this view, capped at its storage


@dataclass
class OpRecord:
    name: str  # "aten.mm.default"
    reads: list[TensorUse]
    writes: list[TensorUse]
    flops: int
    dtype: str  # first floating tensor argument's dtype ("float32"), "" if none
    launches: bool  # False for views and pure allocations


@dataclass
class ReferenceTrace:
    ops: list[OpRecord] = field(default_factory=list)
    leaf_keys: set[tuple[int, int]] = field(default_factory=set)
    output_keys: set[tuple[int, int]] = field(default_factory=set)
    leaf_read_bytes: int = 0  # lower bound on what any kernel must read
    output_bytes: int = 0
    flops: int = 0  # FlopCounterMode's total
    matmul_flops_by_dtype: dict[str, int] = field(default_factory=dict)
    io_tensors: int = 0  # leaves read + outputs written (for sector rounding in the model)

    @property
    def bytes_moved(self) -> int:
        return self.leaf_read_bytes + self.output_bytes

    @property
    def matmul_ops(self) -> list[OpRecord]:
        return [op for op in self.ops if op.flops > 0]


def footprint(t: torch.Tensor) -> int:
    """Bytes a tensor view spans once: broadcast dims counted once, capped at its storage."""
    if t.numel() == 0:
        return 0
    elems = 1
    for size, stride in zip(t.shape, t.stride(), strict=True):
        if stride != 0:
            elems *= size
    try:
        cap = t.untyped_storage().nbytes()
    except (RuntimeError, NotImplementedError):
        cap = elems * t.element_size()
    return min(elems * t.element_size(), cap)


def _storage_addr(t: torch.Tensor) -> int:
    try:
        return int(t.untyped_storage().data_ptr())
    except (RuntimeError, NotImplementedError):
        return id(t)


class _Recorder(TorchDispatchMode):
    """Records each ATen op's reads, writes and FLOPs; storage lives are told apart by generation."""

    def __init__(self, leaves: list[torch.Tensor]) -> None:
        super().__init__()
        self.generation: dict[int, int] = {}
        self.trace = ReferenceTrace()
        self.leaf_reads: dict[tuple[int, int], int] = {}
        for t in leaves:
            key = self._key(t)
            self.trace.leaf_keys.add(key)

    def _key(self, t: torch.Tensor) -> tuple[int, int]:
        addr = _storage_addr(t)
        return (addr, self.generation.get(addr, 0))

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        with contextlib.suppress(Exception):  # accounting must never break the reference
            self._record(func, args, kwargs, out)
        return out

    def _record(self, func: Any, args: Any, kwargs: Any, out: Any) -> None:
        name = str(func.overloadpacket.__name__) if hasattr(func, "overloadpacket") else str(func)
        base = name.rstrip("_") if not name.startswith("_") else name
        in_tensors = [a for a in tree_flatten((args, kwargs))[0] if isinstance(a, torch.Tensor)]
        out_tensors = [o for o in tree_flatten(out)[0] if isinstance(o, torch.Tensor)]
        is_view = bool(getattr(func, "is_view", False))
        launches = not is_view and base not in _FREE_OPS
        mutable = bool(getattr(getattr(func, "_schema", None), "is_mutable", False))

        reads: list[TensorUse] = []
        for i, t in enumerate(in_tensors):
            key = self._key(t)
            nbytes = footprint(t)
            if i == 0 and base in _ROW_GATHERS:
                nbytes = _gathered_row_bytes(base, t, args)
            elif i == 0 and base in _SPARSE_GATHERS:
                nbytes = min(nbytes, sum(footprint(o) for o in out_tensors))
                if key in self.trace.leaf_keys:
                    self.leaf_reads.setdefault(key, 0)  # read, but no lower bound on how much
                reads.append(TensorUse(key, nbytes))
                continue
            reads.append(TensorUse(key, nbytes))
            if launches and key in self.trace.leaf_keys:
                self.leaf_reads[key] = max(self.leaf_reads.get(key, 0), nbytes)

        in_addrs = {_storage_addr(t) for t in in_tensors}
        writes: list[TensorUse] = []
        for t in out_tensors:
            addr = _storage_addr(t)
            aliased = addr in in_addrs and (mutable or is_view)
            if not aliased and not is_view:
                self.generation[addr] = self.generation.get(addr, 0) + 1
            if launches:
                writes.append(TensorUse(self._key(t), footprint(t)))

        from torch.utils.flop_counter import flop_registry

        flops = 0
        counter = flop_registry.get(getattr(func, "overloadpacket", None))
        if counter is not None:
            try:
                flops = int(counter(*args, **kwargs, out_val=out))
            except Exception:  # noqa: BLE001 - a registry entry that does not fit: count none
                flops = 0
        dtype = next((str(t.dtype).removeprefix("torch.") for t in in_tensors if t.is_floating_point()), "")
        self.trace.ops.append(OpRecord(str(func), reads, writes if launches else [], flops, dtype, launches))


def _gathered_row_bytes(base: str, table: torch.Tensor, args: Any) -> int:
    """Distinct rows an embedding-style gather must read from ``table``: an exact lower bound."""
    try:
        if base == "index_select":
            dim, index = int(args[1]), args[2]
            if dim != 0:
                return 0
        else:
            index = args[1]
        if table.dim() == 0 or not isinstance(index, torch.Tensor):
            return 0
        rows = int(torch.unique(index.detach()).numel())
        row_bytes = footprint(table[0]) if table.shape[0] > 0 else 0
        return min(rows * row_bytes, footprint(table))
    except Exception:  # noqa: BLE001 - unknown layout: no lower bound
        return 0


def _leaf_tensors(reference: torch.nn.Module, inputs: list[Any]) -> list[torch.Tensor]:
    leaves = [t for t in tree_flatten(inputs)[0] if isinstance(t, torch.Tensor)]
    leaves += list(reference.parameters()) + list(reference.buffers())
    return leaves


def trace_reference(reference: torch.nn.Module, inputs: list[Any]) -> tuple[ReferenceTrace, Any]:
    """Run ``reference(*inputs)`` once under the recorder; returns the trace and the output."""
    # Imported here: torch.utils.flop_counter imports triton, which must not happen before a
    # CPU process has set TRITON_INTERPRET.
    from torch.utils.flop_counter import FlopCounterMode

    recorder = _Recorder(_leaf_tensors(reference, inputs))
    counter = FlopCounterMode(display=False)
    with torch.no_grad(), counter, recorder:
        out = reference(*inputs)
    trace = recorder.trace
    trace.flops = int(counter.get_total_flops())
    trace.leaf_read_bytes = sum(recorder.leaf_reads.values())
    trace.io_tensors = len(recorder.leaf_reads)
    seen: set[int] = set()
    for t in tree_flatten(out)[0]:
        if not isinstance(t, torch.Tensor):
            continue
        key = recorder._key(t)
        trace.output_keys.add(key)
        if key in trace.leaf_keys or key[0] in seen:
            continue  # an output aliasing an input needs no write
        seen.add(key[0])
        trace.output_bytes += footprint(t)
        trace.io_tensors += 1
    for op in trace.ops:
        if op.flops > 0:
            dt = op.dtype or "float32"
            trace.matmul_flops_by_dtype[dt] = trace.matmul_flops_by_dtype.get(dt, 0) + op.flops
    if trace.flops > sum(trace.matmul_flops_by_dtype.values()):
        # FlopCounterMode saw FLOPs our per-op pass missed: price the rest at the fastest rate.
        extra = trace.flops - sum(trace.matmul_flops_by_dtype.values())
        trace.matmul_flops_by_dtype["fp8"] = trace.matmul_flops_by_dtype.get("fp8", 0) + extra
    return trace, out


def compute_time_ms(trace: ReferenceTrace, hw: HardwareSpec, measured: bool = True) -> float:
    """Sum over dtypes of matmul FLOPs at that dtype's tensor-core rate, in ms."""
    return sum(
        flops / (hw.matmul_tflops(dtype, measured=measured) * 1e12) * 1e3
        for dtype, flops in trace.matmul_flops_by_dtype.items()
    )


def roofline_for(trace: ReferenceTrace, hw: HardwareSpec) -> Roofline:
    memory_ms = trace.bytes_moved / (hw.bandwidth_gbps() * 1e9) * 1e3
    compute_ms = compute_time_ms(trace, hw)
    hard_bytes = trace.leaf_read_bytes + max(0, trace.output_bytes - hw.l2_bytes)
    hard_ms = max(
        hard_bytes / (hw.peak_bandwidth_gbps() * 1e9) * 1e3,
        compute_time_ms(trace, hw, measured=False),
    )
    return Roofline(
        hardware=hw.name,
        bytes_moved=trace.bytes_moved,
        flops=trace.flops,
        floor_ms=max(memory_ms, compute_ms),
        bound="compute" if compute_ms > memory_ms else "memory",
        hard_floor_ms=hard_ms,
        ceiling=hw.ceiling_source(),
    )
