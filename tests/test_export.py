"""Outcome files: the evolved kernel re-verifies, the regression test passes, the dispatcher
falls back to PyTorch unless a measured speedup > 1 covers the input bucket."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from engine_support import POOR_SEED, PROBLEM, EvolvedRun, cli, evolve_once
from kernelevolve.search.export import render_outcome_files, write_outcome_files
from kernelevolve.search.history import History
from kernelevolve.search.results import (
    EvalResult,
    Fingerprint,
    InputSetResult,
    ShapeTiming,
    Stage,
    TimingKind,
    TimingStats,
    Verdict,
)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def evolved(tmp_path_factory: pytest.TempPathFactory) -> EvolvedRun:
    return evolve_once(tmp_path_factory.mktemp("evolved"))


def run_python(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Generated files import the candidate: run them in a child process, never in this one."""
    env = dict(os.environ, TRITON_INTERPRET="1")
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=300,
    )


def test_outcome_files_are_written_beside_the_kernel(evolved: EvolvedRun) -> None:
    best = evolved.summary["best"]
    assert best["path"] == str(evolved.out)
    assert best["dispatch_path"] == str(evolved.out.with_name("add_dispatch.py"))
    assert best["test_path"] == str(evolved.out.with_name("test_add_evolved.py"))
    kernel = evolved.out.read_text()
    assert kernel.startswith(f"# Evolved by kernelevolve: run {evolved.summary['run_id']}, candidate ")
    assert "modelled" in kernel.splitlines()[0] and "class ModelNew" in kernel


def test_evolved_kernel_reverifies_with_kernelevolve_eval(evolved: EvolvedRun, tmp_path: Path) -> None:
    proc = cli("eval", str(PROBLEM), str(evolved.out), "--json", "--db", str(tmp_path / "h.db"))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["verdict"] == "correct"


def test_generated_regression_test_passes(evolved: EvolvedRun) -> None:
    test_file = evolved.out.with_name("test_add_evolved.py")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test_file)],
        capture_output=True, text=True, cwd=test_file.parent, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 passed" in proc.stdout


def test_dispatch_uses_pytorch_when_the_evidence_is_only_modelled(evolved: EvolvedRun) -> None:
    proc = run_python(
        f"""
        import importlib.util, torch
        spec = importlib.util.spec_from_file_location("d", {str(evolved.out.with_name("add_dispatch.py"))!r})
        d = importlib.util.module_from_spec(spec); spec.loader.exec_module(d)
        x, y = torch.randn(1 << 17), torch.randn(1 << 17)
        assert d.FAST_BUCKETS == frozenset(), d.FAST_BUCKETS
        assert not d.use_kernel((x, y))
        assert torch.equal(d.Dispatch()(x, y), x + y)
        print("ok")
        """,
        evolved.root,
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr


def measured_result(speedups: dict[int, float]) -> EvalResult:
    """Per-shape timings as the GPU harness reports them (fixture data for the table logic)."""
    timings, sets = [], []
    for n, speedup in speedups.items():
        shapes = [[n], [n]]
        sets.append(InputSetResult(f"seed:{n}", shapes, ["float32", "float32"], passed=True))
        cand = TimingStats(median_ms=1.0, min_ms=1.0, p20_ms=1.0, p80_ms=1.0, reps=10)
        base = TimingStats(median_ms=speedup, min_ms=speedup, p20_ms=speedup, p80_ms=speedup, reps=10)
        timings.append(ShapeTiming(f"seed:{n}", shapes, TimingKind.MEASURED, cand, base))
    fp = Fingerprint(device="NVIDIA H200", driver="x", cuda="12", torch="2", triton="3", python="3.12")
    return EvalResult(
        Verdict.CORRECT,
        Stage.DONE,
        timing_kind=TimingKind.MEASURED,
        input_sets=sets,
        timings=timings,
        fingerprint=fp,
    )


def test_dispatch_table_keeps_only_buckets_measured_faster(tmp_path: Path) -> None:
    with History(tmp_path / "h.db") as history:
        run = history.create_run(
            kind="evolve", problem_path=str(PROBLEM), problem_hash="x", signature=None, strategy="greedy",
            config={}, device="cuda", timing_kind="measured",
        )  # fmt: skip
        cid = history.add_candidate(run_id=run, parent_id=None, operator="seed", source=POOR_SEED.read_text())
        history.record_evaluation(cid, measured_result({4096: 1.7, 65536: 0.8}), 1.2)
        files = render_outcome_files(history, PROBLEM, cid, tmp_path / "k_evolved.py")
        paths = write_outcome_files(history, PROBLEM, cid, tmp_path / "k_evolved.py")
    assert paths == (files.kernel_path, files.dispatch_path, files.test_path)
    assert files.dispatch_path.name == "k_dispatch.py" and files.test_path.name == "test_k_evolved.py"
    assert "1.17x measured on NVIDIA H200" in files.kernel.splitlines()[0]  # geomean of 1.7 and 0.8
    proc = run_python(
        f"""
        import importlib.util, torch
        spec = importlib.util.spec_from_file_location("d", {str(files.dispatch_path)!r})
        d = importlib.util.module_from_spec(spec); spec.loader.exec_module(d)
        print(sorted(d.FAST_BUCKETS))
        print(d.use_kernel((torch.randn(4096), torch.randn(4096))))  # CPU tensors: always PyTorch
        """,
        tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    buckets, cpu = proc.stdout.strip().splitlines()
    assert buckets == "[(((4096,), (4096,)), ('float32', 'float32'))]"
    assert cpu == "False"


def test_refuses_to_export_a_rejected_candidate(tmp_path: Path) -> None:
    with History(tmp_path / "h.db") as history:
        run = history.create_run(
            kind="evolve", problem_path=str(PROBLEM), problem_hash="x", signature=None, strategy="greedy",
            config={}, device="cpu", timing_kind="modelled",
        )  # fmt: skip
        cid = history.add_candidate(run_id=run, parent_id=None, operator="seed", source="x = 1\n")
        history.record_evaluation(cid, EvalResult(Verdict.REJECTED, Stage.COMPILE, reason="boom"), 0.0)
        with pytest.raises(ValueError, match="not an evaluated, correct candidate"):
            render_outcome_files(history, PROBLEM, cid)
