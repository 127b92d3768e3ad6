"""Timing statistics, integrity cross-checks and the fingerprint; the CUDA paths run on a GPU only.

Triton is not imported at module level: importing it before TRITON_INTERPRET is set would build
triton.language's own helpers for a GPU and break interpreted kernels in later test modules.
"""

from __future__ import annotations

import platform
import shutil
from importlib.metadata import version
from pathlib import Path

import pytest
import torch
from kernelevolve.search import timing
from kernelevolve.search.fingerprint import CPU_DEVICE, collect
from kernelevolve.search.results import HARNESS_VERSION

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


def test_stats_report_median_min_and_quantiles() -> None:
    stats = timing.stats_of([5.0, 1.0, 2.0, 4.0, 3.0])
    assert stats.median_ms == 3.0 and stats.min_ms == 1.0 and stats.reps == 5
    assert stats.p20_ms == pytest.approx(1.8) and stats.p80_ms == pytest.approx(4.2)
    assert stats.spread_ms == pytest.approx(2.4)


def test_integrity_accepts_consistent_event_sync_and_wall_times() -> None:
    events = [0.100] * 30
    assert timing._integrity(events, [0.104] * 30, wall_s=0.010) is None


def test_integrity_flags_work_left_running_after_the_timed_call() -> None:
    issue = timing._integrity([0.002] * 30, [0.500] * 30, wall_s=0.030)
    assert issue is not None and "side stream" in issue


def test_integrity_flags_event_times_the_host_clock_cannot_account_for() -> None:
    issue = timing._integrity([1.0] * 30, [1.0] * 30, wall_s=0.001)
    assert issue is not None and "timer cannot be trusted" in issue


def test_unseen_work_accepts_a_slow_host_with_fast_kernels() -> None:
    # torch.compile-like: 0.05 ms to enqueue, 0.004 ms of device work after the last launch
    assert timing._unseen_work([0.004] * 20, [0.056] * 20, [0.050] * 20) is None


def test_unseen_work_accepts_device_time_matching_the_events() -> None:
    assert timing._unseen_work([0.500] * 20, [0.530] * 20, [0.010] * 20) is None


def test_unseen_work_flags_a_side_stream_that_ran_ahead_of_the_timed_region() -> None:
    # the H200 case: events saw 1 us, an idle device stayed busy ~0.5 ms after a 10 us enqueue
    issue = timing._unseen_work([0.00125] * 20, [0.520] * 20, [0.010] * 20)
    assert issue is not None and "side stream" in issue


def test_fingerprint_on_cpu_names_the_interpreter_and_versions() -> None:
    fp = collect("cpu", "nvidia-h200")
    assert fp.device == CPU_DEVICE == "cpu (Triton interpreter)"
    assert fp.driver is None and fp.cuda is None
    assert fp.torch == torch.__version__ and fp.triton == version("triton")
    assert fp.python == platform.python_version()
    assert fp.harness_version == HARNESS_VERSION
    assert fp.hardware_model == "nvidia-h200"
    assert fp.host


@needs_cuda
@pytest.mark.gpu
def test_large_copy_is_timed_near_copy_bandwidth_and_a_side_stream_is_flagged() -> None:
    src = torch.randn(1 << 28, device="cuda")
    dst = torch.empty_like(src)
    honest = timing.measure(lambda: dst.copy_(src))
    assert honest.integrity_issue is None and honest.stats.reps >= timing.MIN_REPS
    side = torch.cuda.Stream()

    def sneaky() -> None:
        with torch.cuda.stream(side):
            dst.copy_(src)

    flagged = timing.measure(sneaky)
    assert flagged.integrity_issue is not None
    assert flagged.stats.median_ms >= 0.8 * honest.stats.median_ms


@needs_cuda
@pytest.mark.gpu
def test_fingerprint_on_cuda_has_device_and_cuda_version() -> None:
    fp = collect("cuda", None)
    assert fp.device == torch.cuda.get_device_name()
    assert fp.cuda == torch.version.cuda


def test_fingerprint_code_hash_changes_with_any_source_edit(tmp_path: Path) -> None:
    import subprocess
    import sys

    script = (
        "import sys; sys.path.insert(0, sys.argv[1]); "
        "from kernelevolve.search.fingerprint import code_hash; print(code_hash())"
    )
    root = Path(__file__).resolve().parents[1]
    shim = tmp_path / "kernelevolve"
    shim.mkdir()
    (shim / "__init__.py").write_text("")
    for name in ("search", "knowledge", "server"):
        shutil.copytree(root / name, shim / name, ignore=shutil.ignore_patterns("__pycache__"))

    def hash_of_copy() -> str:
        out = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True)
        assert out.returncode == 0, out.stderr[-1500:]
        return out.stdout.strip()

    before = hash_of_copy()
    assert len(before) == 16 and before == hash_of_copy()
    with (shim / "search" / "engine.py").open("a") as f:
        f.write("\n# an edit\n")
    assert hash_of_copy() != before
