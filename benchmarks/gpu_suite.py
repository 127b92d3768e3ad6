"""GPU self-check of kernelevolve's timing: ceilings, timer honesty, model against measurement.

Run on the GPU machine from the repository root:  python3 benchmarks/gpu_suite.py
Writes gpu_suite.json and gpu_suite.txt to $OUT (default ./gpu-out). Needs torch with CUDA and
triton; kernelevolve is imported from this checkout when it is not installed.

Steps:
 1. ceilings: device-to-device copy bandwidth (bytes read + written), L2-resident copy bandwidth,
    dense matmul rates (bf16, fp16, tf32) on random data, time of an empty Triton launch.
 2. timing self-checks: a large copy timed by search/timing.py must come out within 20% of the
    measured copy bandwidth; a copy issued on a side stream must be flagged and must not look
    faster; a candidate returning a cached output must be rejected by the roofline floor.
 3. end to end: perf.time_input_set on a Triton fused add+relu against eager and torch.compile.
 4. model check: the CPU model (Triton interpreter in a subprocess) against the measurement for
    the same kernel and sizes.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def _import_kernelevolve() -> None:
    try:
        import kernelevolve.search.perf  # noqa: F401
    except ImportError:
        shim = Path(tempfile.mkdtemp(prefix="ke-shim-")) / "kernelevolve"
        shim.mkdir()
        (shim / "__init__.py").write_text("")
        for name in ("search", "knowledge", "server"):
            (shim / name).symlink_to(REPO / name)
        sys.path.insert(0, str(shim.parent))
        os.environ["PYTHONPATH"] = f"{shim.parent}:{os.environ.get('PYTHONPATH', '')}"


_import_kernelevolve()

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from kernelevolve.knowledge.hardware import match_device  # noqa: E402
from kernelevolve.search import timing  # noqa: E402
from kernelevolve.search.config import EvalConfig  # noqa: E402
from kernelevolve.search.fingerprint import collect  # noqa: E402
from kernelevolve.search.perf import floor_violation, time_input_set  # noqa: E402

LINES: list[str] = []


def say(text: str) -> None:
    print(text, flush=True)
    LINES.append(text)


def event_time_ms(fn: Any, reps: int = 10, warmup: int = 3) -> float:
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        s = torch.cuda.Event(enable_timing=True)
        e = torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        torch.cuda.synchronize()
        times.append(s.elapsed_time(e))
    return statistics.median(times)


@triton.jit
def _empty_kernel(x_ptr):
    pass


@triton.jit
def _l2_read_kernel(x_ptr, out_ptr, chunks, BLOCK: tl.constexpr):
    # program p re-reads chunk p % chunks: after the first pass every load hits L2
    pid = tl.program_id(0)
    offs = (pid % chunks) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + pid, tl.sum(tl.load(x_ptr + offs), axis=0))


@triton.jit
def _add_relu_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.maximum(v, 0.0) * 2.0, mask=mask)


@triton.jit
def _matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(c_ptr.dtype.element_ty))


class MatMul(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a @ b


class MatMulTriton(nn.Module):
    """Square sizes divisible by 128 only: enough for a self-check."""

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        m, k = a.shape
        n = b.shape[1]
        c = torch.empty((m, n), device=a.device, dtype=a.dtype)
        grid = (m // 128, n // 128)
        _matmul_kernel[grid](a, b, c, m, n, k, BM=128, BN=128, BK=64, num_warps=8, num_stages=3)
        return c


class AddRelu(nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.relu(x + y) * 2.0


class AddReluTriton(nn.Module):
    def __init__(self, block: int = 1024) -> None:
        super().__init__()
        self.block = block

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        n = x.numel()
        _add_relu_kernel[(triton.cdiv(n, self.block),)](x, y, out, n, BLOCK=self.block)
        return out


class Cached(nn.Module):
    """A cheat: returns an output computed once, doing no work per call."""

    def __init__(self, out: torch.Tensor) -> None:
        super().__init__()
        self.out = out

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return self.out


def ceilings(report: dict[str, Any]) -> None:
    props = torch.cuda.get_device_properties(0)
    report["device"] = {
        "name": torch.cuda.get_device_name(0),
        "sm_count": props.multi_processor_count,
        "l2_bytes": int(getattr(props, "L2_cache_size", 0)),
        "total_memory": props.total_memory,
    }
    say(f"device: {report['device']}")
    n = 1 << 30  # 1 GiB each way
    src = torch.randn(n // 4, device="cuda")
    dst = torch.empty_like(src)
    ms = event_time_ms(lambda: dst.copy_(src))
    report["copy_gbps"] = 2 * n / (ms * 1e-3) / 1e9
    say(f"copy 1 GiB -> 1 GiB: {ms:.3f} ms = {report['copy_gbps']:.0f} GB/s (read + write)")

    block, chunks, programs = 4096, 1024, 65536  # 16 MiB buffer read 64 times = 1 GiB of loads
    buf = torch.randn(block * chunks, device="cuda")
    sums = torch.empty(programs, device="cuda")
    ms = event_time_ms(lambda: _l2_read_kernel[(programs,)](buf, sums, chunks, BLOCK=block))
    report["l2_read_gbps"] = programs * block * 4 / (ms * 1e-3) / 1e9
    say(f"L2-resident reads (16 MiB buffer, 1 GiB loaded): {ms:.3f} ms = {report['l2_read_gbps']:.0f} GB/s")
    rates = {}
    for label, dtype in (("bf16", torch.bfloat16), ("fp16", torch.float16), ("tf32", torch.float32)):
        torch.backends.cuda.matmul.allow_tf32 = label == "tf32"
        a = torch.randn(8192, 8192, device="cuda", dtype=dtype)
        b = torch.randn(8192, 8192, device="cuda", dtype=dtype)
        ms = event_time_ms(lambda a=a, b=b: a @ b)
        rates[label] = 2 * 8192**3 / (ms * 1e-3) / 1e12
        say(f"mm 8192^3 {label} (random): {ms:.3f} ms = {rates[label]:.0f} TFLOP/s")

    torch.backends.cuda.matmul.allow_tf32 = False
    report["mm_tflops"] = rates
    x = torch.empty(1, device="cuda")
    flush = timing.L2Flusher()
    m = timing.measure(lambda: _empty_kernel[(1,)](x), flush=flush)
    report["empty_triton_launch_us"] = m.stats.median_ms * 1e3
    m2 = timing.measure(lambda: x.add_(1), flush=flush)
    report["tiny_aten_op_us"] = m2.stats.median_ms * 1e3
    say(
        f"empty Triton launch: {report['empty_triton_launch_us']:.2f} us; "
        f"1-element ATen add_: {report['tiny_aten_op_us']:.2f} us (timing.measure)"
    )


def self_checks(report: dict[str, Any]) -> None:
    checks: dict[str, Any] = {}
    n = 1 << 30
    src = torch.randn(n // 4, device="cuda")
    dst = torch.empty_like(src)
    flush = timing.L2Flusher()
    honest = timing.measure(lambda: dst.copy_(src), flush=flush)
    gbps = 2 * n / (honest.stats.median_ms * 1e-3) / 1e9
    ok = abs(gbps - report["copy_gbps"]) <= 0.2 * report["copy_gbps"] and honest.integrity_issue is None
    checks["large_copy"] = {"gbps": gbps, "ms": honest.stats.median_ms, "ok": ok}
    say(
        f"[{'PASS' if ok else 'FAIL'}] timing.measure large copy: {gbps:.0f} GB/s vs {report['copy_gbps']:.0f}"
    )

    side = torch.cuda.Stream()

    def on_side_stream() -> None:
        with torch.cuda.stream(side):
            dst.copy_(src)

    sneaky = timing.measure(on_side_stream, flush=flush)
    flagged = sneaky.integrity_issue is not None
    not_faster = sneaky.stats.median_ms >= 0.8 * honest.stats.median_ms
    checks["side_stream"] = {
        "ms": sneaky.stats.median_ms,
        "event_ms": statistics.median(sneaky.event_ms),
        "synced_ms": statistics.median(sneaky.synced_ms),
        "plain_ms": statistics.median(sneaky.plain_ms) if sneaky.plain_ms else None,
        "host_ms": sneaky.host_ms,
        "gap_ms": sneaky.gap_ms,
        "reps": sneaky.stats.reps,
        "flagged": flagged,
        "issue": sneaky.integrity_issue,
        "ok": flagged and not_faster,
    }
    say(
        f"[{'PASS' if flagged and not_faster else 'FAIL'}] side-stream copy: reported "
        f"{sneaky.stats.median_ms:.3f} ms (events alone {statistics.median(sneaky.event_ms):.4f} ms), "
        f"flagged={flagged}; spin {sneaky.gap_ms:.4f} ms, synced {statistics.median(sneaky.synced_ms):.4f} ms, "
        f"idle-device {checks['side_stream']['plain_ms']} ms, host {sneaky.host_ms:.4f} ms"
    )

    x = torch.randn(1 << 26, device="cuda")
    y = torch.randn(1 << 26, device="cuda")
    cheat = Cached(AddRelu()(x, y))
    t = time_input_set("benchmark:0", cheat, AddRelu(), [x, y], EvalConfig(compile_baseline=False), "cuda")
    reason = floor_violation(t)
    checks["cached_output"] = {"ms": t.candidate.median_ms, "reason": reason, "ok": reason is not None}
    say(f"[{'PASS' if reason else 'FAIL'}] cached-output cheat: {t.candidate.median_ms:.4f} ms -> {reason}")
    report["self_checks"] = checks


def end_to_end(report: dict[str, Any]) -> None:
    rows = []
    for log2n in (12, 16, 20, 22, 26):
        x = torch.randn(1 << log2n, device="cuda")
        y = torch.randn(1 << log2n, device="cuda")
        t = time_input_set(f"n=2^{log2n}", AddReluTriton(), AddRelu(), [x, y], EvalConfig(), "cuda")
        row = {
            "n": f"n=2^{log2n}",
            "candidate_ms": t.candidate.median_ms,
            "eager_ms": t.eager.median_ms,
            "compile_ms": t.compile.median_ms if t.compile else None,
            "floor_ms": t.roofline.floor_ms if t.roofline else None,
            "roofline_fraction": t.roofline_fraction,
            "speedup_vs_eager": t.speedup_vs_eager,
            "speedup_vs_compile": t.speedup_vs_compile,
            "violation": floor_violation(t),
            "notes": t.notes,
        }
        rows.append(row)
        say(
            f"add+relu n=2^{log2n}: candidate {row['candidate_ms']:.4f} ms, eager {row['eager_ms']:.4f}, "
            f"compile {row['compile_ms']}, floor {row['floor_ms']:.4f}, fraction {row['roofline_fraction']:.2f}, "
            f"violation={row['violation']}"
        )
    for size in (512, 4096):
        a = torch.randn(size, size, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(size, size, device="cuda", dtype=torch.bfloat16)
        t = time_input_set(f"mm{size}", MatMulTriton(), MatMul(), [a, b], EvalConfig(), "cuda")
        row = {
            "n": f"mm{size}",
            "candidate_ms": t.candidate.median_ms,
            "eager_ms": t.eager.median_ms,
            "compile_ms": t.compile.median_ms if t.compile else None,
            "floor_ms": t.roofline.floor_ms if t.roofline else None,
            "roofline_fraction": t.roofline_fraction,
            "violation": floor_violation(t),
            "notes": t.notes,
        }
        rows.append(row)
        say(
            f"bf16 mm {size}^3: candidate {row['candidate_ms']:.4f} ms, eager {row['eager_ms']:.4f}, "
            f"compile {row['compile_ms']}, floor {row['floor_ms']:.4f}, fraction {row['roofline_fraction']:.2f}, "
            f"violation={row['violation']}"
        )
    report["end_to_end"] = rows


_MODEL_SCRIPT = r"""
import json, os, sys, traceback
os.environ["TRITON_INTERPRET"] = "1"
sys.path.insert(0, os.environ["KE_SUITE_DIR"])
import torch
from gpu_suite import AddRelu, AddReluTriton, MatMul, MatMulTriton
from kernelevolve.search.config import EvalConfig
from kernelevolve.search.perf import time_input_set
cases = [(f"n=2^{k}", AddReluTriton, AddRelu, [torch.randn(1 << k), torch.randn(1 << k)]) for k in (12, 16, 20)]
cases.append(("mm512", MatMulTriton, MatMul, [torch.randn(512, 512, dtype=torch.bfloat16) for _ in range(2)]))
rows = []
for name, cand, ref, inputs in cases:
    try:
        t = time_input_set("m", cand(), ref(), inputs, EvalConfig(device="cpu"), "cpu")
        rows.append({"n": name, "candidate_ms": t.candidate.median_ms, "eager_ms": t.eager.median_ms,
                     "compile_ms": t.compile.median_ms if t.compile else None, "notes": t.notes})
    except Exception:
        row = {"n": name, "error": traceback.format_exc()[-1500:]}
        try:
            cand()(*inputs)  # the same kernel without our counting hooks
            row["plain_interpreter"] = "ok"
        except Exception as exc:
            row["plain_interpreter"] = repr(exc)[-500:]
        rows.append(row)
print(json.dumps(rows))
"""


def model_check(report: dict[str, Any]) -> None:
    env = dict(os.environ, KE_SUITE_DIR=str(Path(__file__).parent), CUDA_VISIBLE_DEVICES="")
    proc = subprocess.run(
        [sys.executable, "-c", _MODEL_SCRIPT], capture_output=True, text=True, env=env, timeout=400
    )
    if proc.returncode != 0:
        say(f"model check failed: {proc.stderr[-2000:]}")
        report["model_check"] = {"error": proc.stderr[-2000:]}
        return
    modelled = json.loads(proc.stdout.strip().splitlines()[-1])
    measured = {r["n"]: r for r in report.get("end_to_end", [])}
    rows = []
    for m in modelled:
        if "error" in m:
            rows.append(m)
            say(f"model {m['n']} failed (plain interpreter: {m['plain_interpreter']}): {m['error'][-300:]}")
            continue
        real = measured.get(m["n"])
        if real is None:
            continue
        row: dict[str, Any] = {"n": m["n"], "notes": m["notes"]}
        for key in ("candidate_ms", "eager_ms", "compile_ms"):
            row[key] = {"modelled": m[key], "measured": real[key]}
        rows.append(row)
        say(
            f"model vs measured {m['n']}: candidate {m['candidate_ms']:.4f}/{real['candidate_ms']:.4f} ms, "
            f"eager {m['eager_ms']:.4f}/{real['eager_ms']:.4f}, compile {m['compile_ms']:.4f}/{real['compile_ms']:.4f}"
        )
    report["model_check"] = rows


def main() -> int:
    out = Path(os.environ.get("OUT", "gpu-out"))
    out.mkdir(parents=True, exist_ok=True)
    if not torch.cuda.is_available():
        print("gpu_suite: no CUDA device", file=sys.stderr)
        return 2
    report: dict[str, Any] = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    hw = match_device(torch.cuda.get_device_name(0))
    report["fingerprint"] = collect("cuda", hw.name if hw else None).__dict__
    say(f"fingerprint: {report['fingerprint']}")
    steps = [ceilings, self_checks, end_to_end, model_check]
    only = os.environ.get("KE_SUITE_STEPS")
    for step in steps:
        if only and step.__name__ not in only.split(","):
            continue
        try:
            step(report)
        except Exception as exc:  # noqa: BLE001 - record and go on to the next step
            say(f"step {step.__name__} failed: {type(exc).__name__}: {exc}")
            report.setdefault("errors", []).append(f"{step.__name__}: {exc!r}")
        (out / "gpu_suite.json").write_text(json.dumps(report, indent=2, default=str))
        (out / "gpu_suite.txt").write_text("\n".join(LINES) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
