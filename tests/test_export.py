"""Outcome files: the evolved kernel re-verifies, the regression test passes, the dispatcher
takes the kernel where a measured speedup > 1 (at p80) covers the input bucket, else the baseline
measured fastest there (torch.compile or eager), and the eager Model wherever evidence is missing."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from engine_support import POOR_SEED, PROBLEM, EvolvedRun, cli, evolve_once
from kernelevolve.search.export import OutcomeFiles, evidence, render_outcome_files, write_outcome_files
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


def run_python(code: str, cwd: Path, interpret: bool = True) -> subprocess.CompletedProcess[str]:
    """Generated files import the candidate: run them in a child process, never in this one.
    ``interpret=False`` leaves Triton compiling for the GPU (the CUDA-only tests)."""
    env = dict(os.environ)
    if interpret:
        env["TRITON_INTERPRET"] = "1"
    else:
        env.pop("TRITON_INTERPRET", None)
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
        assert d.PATHS == {{}}, d.PATHS
        assert d.choose_path((x, y)) == "eager"
        assert not d.use_kernel((x, y))
        assert torch.equal(d.Dispatch()(x, y), x + y)
        print("ok")
        """,
        evolved.root,
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr


def stats(ms: float, p80_ms: float | None = None) -> TimingStats:
    p80 = ms if p80_ms is None else p80_ms
    return TimingStats(median_ms=ms, min_ms=ms, p20_ms=ms, p80_ms=p80, reps=10)


def timed_result(
    rows: dict[int, dict[str, float]],
    device: str = "NVIDIA H200",
    kind: TimingKind = TimingKind.MEASURED,
) -> EvalResult:
    """An evaluation with per-set timings as the harness reports them. The milliseconds come from
    the caller and are SYNTHETIC (no GPU ran): they pin down the export's decision table.

    ``rows`` maps a vector length n (set shapes [[n], [n]], float32) to times in ms: ``kernel``
    (median), optional ``kernel_p80``, ``eager``, optional ``compile`` and ``max_autotune``."""
    timings, sets = [], []
    for n, t in rows.items():
        shapes = [[n], [n]]
        sets.append(InputSetResult(f"benchmark:{n}", shapes, ["float32", "float32"], passed=True))
        timings.append(
            ShapeTiming(
                f"benchmark:{n}",
                shapes,
                kind,
                stats(t["kernel"], t.get("kernel_p80")),
                stats(t["eager"]),
                compile=stats(t["compile"]) if "compile" in t else None,
                compile_max_autotune=stats(t["max_autotune"]) if "max_autotune" in t else None,
            )
        )
    fp = Fingerprint(device=device, driver="x", cuda="12", torch="2", triton="3", python="3.12")
    return EvalResult(
        Verdict.CORRECT, Stage.DONE, timing_kind=kind, input_sets=sets, timings=timings, fingerprint=fp
    )


def measured_result(speedups: dict[int, float]) -> EvalResult:
    """SYNTHETIC per-shape timings: kernel 1 ms, eager ``speedup`` ms, no torch.compile baseline."""
    return timed_result({n: {"kernel": 1.0, "eager": speedup} for n, speedup in speedups.items()})


def export(tmp_path: Path, result: EvalResult) -> OutcomeFiles:
    """Record ``result`` for the poor seed in a real history database and write the outcome files."""
    with History(tmp_path / "h.db") as history:
        run = history.create_run(
            kind="evolve", problem_path=str(PROBLEM), problem_hash="x", signature=None, strategy="greedy",
            config={}, device="cuda", timing_kind=result.timing_kind.value if result.timing_kind else None,
        )  # fmt: skip
        cid = history.add_candidate(run_id=run, parent_id=None, operator="seed", source=POOR_SEED.read_text())
        history.record_evaluation(cid, result, 1.0)
        write_outcome_files(history, PROBLEM, cid, tmp_path / "k_evolved.py")
        return render_outcome_files(history, PROBLEM, cid, tmp_path / "k_evolved.py")


# SYNTHETIC timings (ms), one bucket per decision the dispatcher makes; see timed_result.
DECISIONS: dict[int, dict[str, float]] = {
    1024: {"kernel": 1.0, "eager": 2.0, "compile": 1.5},  # kernel faster at p80 -> kernel
    2048: {"kernel": 1.0, "eager": 1.2, "compile": 0.6},  # compile best, kernel slower -> compile
    4096: {"kernel": 1.0, "eager": 0.9, "compile": 1.1},  # eager best -> eager
    8192: {"kernel": 1.0, "eager": 2.0, "compile": 0.9, "max_autotune": 0.5},  # -> compile_max_autotune
    16384: {"kernel": 1.0, "kernel_p80": 1.3, "eager": 1.2},  # kernel faster only at its median -> eager
    32768: {"kernel": 1.0, "eager": 0.7, "compile": 0.7},  # eager and compile tie -> eager
}
EXPECTED_PATHS = {
    1024: "kernel",
    2048: "compile",
    4096: "eager",
    8192: "compile_max_autotune",
    16384: "eager",
    32768: "eager",
}

# A child process's view of the dispatcher's choices for inputs on a CUDA device of the evidence's
# model, without one: FakeTensorMode makes CUDA tensors (metadata only, nothing runs on a GPU) and
# _device_name, the one GPU query, answers with the model the caller names.
FAKE_CUDA = """
import importlib.util, json, sys, torch
from torch._subclasses.fake_tensor import FakeTensorMode
spec = importlib.util.spec_from_file_location("d", sys.argv[1])
d = importlib.util.module_from_spec(spec); spec.loader.exec_module(d)
d._device_name = lambda index: sys.argv[2]
def fake_cuda(n):
    with FakeTensorMode():
        return torch.empty(n, device="cuda"), torch.empty(n, device="cuda")
"""


def run_fake_cuda(files: OutcomeFiles, device: str, code: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, TRITON_INTERPRET="1")
    return subprocess.run(
        [sys.executable, "-c", FAKE_CUDA + textwrap.dedent(code), str(files.dispatch_path), device],
        capture_output=True, text=True, cwd=files.dispatch_path.parent, env=env, timeout=300,
    )  # fmt: skip


def test_evidence_names_the_fastest_baseline_of_each_set(tmp_path: Path) -> None:
    with History(tmp_path / "h.db") as history:
        run = history.create_run(
            kind="evolve", problem_path=str(PROBLEM), problem_hash="x", signature=None, strategy="greedy",
            config={}, device="cuda", timing_kind="measured",
        )  # fmt: skip
        cid = history.add_candidate(run_id=run, parent_id=None, operator="seed", source=POOR_SEED.read_text())
        history.record_evaluation(cid, timed_result(DECISIONS), 1.0)
        candidate = history.get_candidate(cid)
    assert candidate is not None
    rows = {row["shapes"][0][0]: row for row in evidence(candidate)["sets"]}
    assert {n: row["best_baseline"] for n, row in rows.items()} == {
        1024: "compile",
        2048: "compile",
        4096: "eager",
        8192: "compile_max_autotune",
        16384: "eager",  # no torch.compile timing for this set
        32768: "eager",  # a tie goes to eager
    }
    assert rows[2048]["best_baseline_ms"] == 0.6 and rows[2048]["speedup_p80"] == 0.6
    assert rows[16384]["speedup"] == 1.2 and rows[16384]["speedup_p80"] == round(1.2 / 1.3, 4)
    assert set(rows[1024]) == {
        "input_set", "shapes", "dtypes", "speedup", "speedup_p80", "kernel_ms", "best_baseline_ms",
        "best_baseline", "kind",
    }  # fmt: skip


def test_choose_path_takes_the_path_measured_fastest_per_bucket(tmp_path: Path) -> None:
    files = export(tmp_path, timed_result(DECISIONS))
    proc = run_fake_cuda(
        files,
        "NVIDIA H200",
        f"""
        sizes = {sorted(DECISIONS)!r}
        print(json.dumps({{
            "cuda": {{n: d.choose_path(fake_cuda(n)) for n in sizes}},
            "use_kernel": {{n: d.use_kernel(fake_cuda(n)) for n in sizes}},
            "cpu": {{n: d.choose_path((torch.randn(n), torch.randn(n))) for n in sizes}},
            "unknown_shape": d.choose_path(fake_cuda(3000)),
            "fp16": d.choose_path(tuple(t.half() for t in fake_cuda(2048))),
        }}))
        """,
    )
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert got["cuda"] == {str(n): path for n, path in EXPECTED_PATHS.items()}
    assert got["use_kernel"] == {str(n): n == 1024 for n in DECISIONS}
    assert set(got["cpu"].values()) == {"eager"}  # CPU tensors: always the eager Model
    assert got["unknown_shape"] == "eager" and got["fp16"] == "eager"


def test_choose_path_is_eager_on_another_gpu_model(tmp_path: Path) -> None:
    files = export(tmp_path, timed_result(DECISIONS))
    proc = run_fake_cuda(
        files,
        "NVIDIA A100-SXM4-80GB",
        "print(d.choose_path(fake_cuda(2048)), d.choose_path(fake_cuda(1024)))",
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["eager", "eager"]


def test_choose_path_is_eager_when_the_evidence_is_modelled(tmp_path: Path) -> None:
    files = export(tmp_path, timed_result(DECISIONS, kind=TimingKind.MODELLED))
    proc = run_fake_cuda(
        files,
        "NVIDIA H200",
        f"print(d.PATHS, sorted({{d.choose_path(fake_cuda(n)) for n in {sorted(DECISIONS)!r}}}))",
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "{} ['eager']"


def test_dispatch_on_cpu_tensors_runs_the_eager_reference(tmp_path: Path) -> None:
    files = export(tmp_path, timed_result(DECISIONS))
    proc = run_python(
        f"""
        import importlib.util, torch
        spec = importlib.util.spec_from_file_location("d", {str(files.dispatch_path)!r})
        d = importlib.util.module_from_spec(spec); spec.loader.exec_module(d)
        model = d.Dispatch()
        calls = []
        model.reference.register_forward_hook(lambda *_: calls.append("reference"))
        model.kernel.register_forward_hook(lambda *_: calls.append("kernel"))
        for n in (2048, 1024, 4096):  # measured compile-, kernel- and eager-best buckets, but on the CPU
            x, y = torch.randn(n), torch.randn(n)
            assert d.choose_path((x, y)) == "eager"
            assert torch.equal(model(x, y), x + y)
        assert calls == ["reference"] * 3, calls
        assert model.compiled == {{}} and model.compile_failures == {{}}
        print("ok")
        """,
        tmp_path,
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr


def test_generated_dispatch_passes_the_projects_ruff_rules(tmp_path: Path) -> None:
    if importlib.util.find_spec("ruff") is None:  # the dev environment has it; a GPU image may not
        pytest.skip("ruff is not installed in this interpreter")
    files = export(tmp_path, timed_result(DECISIONS))
    pyproject = Path(__file__).resolve().parents[1] / "pyproject.toml"
    proc = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "--config", str(pyproject), str(files.dispatch_path)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("failing", ["creation", "first_call"])
def test_dispatch_runs_eagerly_for_good_when_torch_compile_fails(tmp_path: Path, failing: str) -> None:
    files = export(tmp_path, timed_result(DECISIONS))
    # torch.compile (a dependency, not the code under test) is replaced by one that fails, the way a
    # missing compiler toolchain makes it fail; tensors are fake CUDA ones (see FAKE_CUDA).
    proc = run_fake_cuda(
        files,
        "NVIDIA H200",
        f"""
        import warnings
        compiles = []
        def broken_compile(module, mode=None):
            compiles.append(mode)
            if {failing!r} == "creation":
                raise RuntimeError("no C compiler")
            def run(*args):
                raise RuntimeError("inductor failed")
            return run
        torch.compile = broken_compile
        model = d.Dispatch()
        calls = []
        model.reference.register_forward_hook(lambda *_: calls.append("reference"))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for _ in range(3):
                out = model(*fake_cuda(2048))
                assert out.shape == (2048,) and out.is_cuda
        assert compiles == [None], compiles  # one attempt, then eager for good
        assert calls == ["reference"] * 3, calls
        assert list(model.compile_failures) == ["compile"] and model.compiled == {{}}
        assert len(caught) == 1 and "eager Model" in str(caught[0].message), caught
        print("ok")
        """,
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr


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


DISPATCH_CHECK = Path(__file__).resolve().parents[1] / "benchmarks" / "dispatch_check.py"
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


def dispatch_check(files: OutcomeFiles, out_json: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    return subprocess.run(
        [sys.executable, str(DISPATCH_CHECK), str(PROBLEM), str(files.dispatch_path), "--json", str(out_json)],
        capture_output=True, text=True, env=env, timeout=600,
    )  # fmt: skip


@pytest.mark.skipif(torch.cuda.is_available(), reason="the message for machines without CUDA")
def test_dispatch_check_says_it_needs_cuda_and_exits_2(tmp_path: Path) -> None:
    files = export(tmp_path, timed_result(DECISIONS))
    proc = dispatch_check(files, tmp_path / "check.json")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "no CUDA device" in proc.stderr and proc.stdout == ""
    assert not (tmp_path / "check.json").exists()


@pytest.mark.gpu
@needs_cuda
def test_dispatch_runs_torch_compile_on_cuda_where_compile_was_best(tmp_path: Path) -> None:
    """Real CUDA tensors, real torch.compile, real kernel: only the evidence numbers are SYNTHETIC
    (DECISIONS), recorded for this machine's GPU model."""
    files = export(tmp_path, timed_result(DECISIONS, device=torch.cuda.get_device_name(0)))
    proc = run_python(
        f"""
        import importlib.util, torch
        spec = importlib.util.spec_from_file_location("d", {str(files.dispatch_path)!r})
        d = importlib.util.module_from_spec(spec); spec.loader.exec_module(d)
        model = d.Dispatch().cuda()
        kernel_calls = []
        model.kernel.register_forward_hook(lambda *_: kernel_calls.append(1))
        paths = {{}}
        for n in (2048, 8192, 1024, 4096):
            x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
            paths[n] = d.choose_path((x, y))
            for _ in range(2):
                torch.testing.assert_close(model(x, y), x + y)
        assert paths == {{2048: "compile", 8192: "compile_max_autotune", 1024: "kernel", 4096: "eager"}}, paths
        assert model.compile_failures == {{}}, model.compile_failures
        assert sorted(model.compiled) == ["compile", "compile_max_autotune"], model.compiled
        assert len(kernel_calls) == 2, kernel_calls
        print("ok")
        """,
        tmp_path,
        interpret=False,
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stdout + proc.stderr


@pytest.mark.gpu
@needs_cuda
def test_dispatch_check_times_the_compile_path_on_cuda(tmp_path: Path) -> None:
    # SYNTHETIC evidence: torch.compile recorded as fastest for the problem's get_inputs() bucket.
    compile_best = {1 << 17: {"kernel": 1.0, "eager": 1.2, "compile": 0.6}}
    files = export(tmp_path, timed_result(compile_best, device=torch.cuda.get_device_name(0)))
    proc = dispatch_check(files, tmp_path / "check.json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads((tmp_path / "check.json").read_text())
    [row] = report["sets"]
    assert (row["input_set"], row["path"], row["ran"]) == ("seed:0", "compile", "compile"), row
    assert row["output_matches"], row["mismatch"]
    assert all(row[k] > 0 for k in ("eager_ms", "compile_ms", "dispatch_ms")), row
    fastest_baseline = min(row["eager_ms"], row["compile_ms"])
    assert row["speedup_after_dispatch"] == pytest.approx(fastest_baseline / row["dispatch_ms"])
    assert report["min_speedup_after_dispatch"] == row["speedup_after_dispatch"]
    assert report["fingerprint"]["device"] == torch.cuda.get_device_name(0)
    assert "speedup after dispatch" in proc.stdout
