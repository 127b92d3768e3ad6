"""The sandbox contains every crash in tests/crash_corpus: a recorded rejection, the caller alive,
no process left behind. Real worker subprocesses, no mocks."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest
from kernelevolve.search.config import EvalConfig, SandboxLimits
from kernelevolve.search.harness import evaluate
from kernelevolve.search.results import Stage, Verdict

HERE = Path(__file__).parent
CORPUS = HERE / "crash_corpus"
PROBLEM = HERE / "harness_fixtures" / "add_problem.py"

pytestmark = pytest.mark.slow


def _config(tmp_path: Path, **limits: object) -> EvalConfig:
    # A cache dir unique to the test marks every process the worker starts (it is in their env).
    return EvalConfig(
        device=os.environ.get("KERNELEVOLVE_TEST_DEVICE", "cpu"),  # "cuda": the same corpus on a GPU
        skip_timing=True,
        static_checks=False,
        cache_dir=str(tmp_path / "cache"),
        limits=SandboxLimits(**{"timeout_s": 60.0, **limits}),  # type: ignore[arg-type]
    )


def _leftovers(marker: str) -> list[int]:
    found = []
    for proc in psutil.process_iter(["pid"]):
        try:
            if proc.environ().get("TRITON_CACHE_DIR", "").startswith(marker):
                found.append(proc.pid)
        except (psutil.Error, OSError):
            continue
    return found


def _run(tmp_path: Path, name: str, problem: Path = PROBLEM, **limits: object):
    config = _config(tmp_path, **limits)
    source = (CORPUS / name).read_text()
    result = evaluate(problem, source, config, candidate_name=name)
    assert result.verdict is Verdict.REJECTED
    assert _leftovers(str(tmp_path / "cache")) == []
    return result


def test_segfault_becomes_sandbox_rejection_naming_the_signal(tmp_path: Path) -> None:
    result = _run(tmp_path, "segfault.py")
    assert result.stage is Stage.SANDBOX
    assert result.reason == "segfault (SIGSEGV) during compile"
    assert "Fatal Python error" in result.log_tail  # faulthandler's traceback is kept for feedback


def test_os_exit_is_reported_with_its_code(tmp_path: Path) -> None:
    result = _run(tmp_path, "os_exit.py")
    assert result.stage is Stage.SANDBOX
    assert result.reason is not None and result.reason.startswith("exited with code 3 without a result")
    assert result.reason.endswith("during compile")


def test_sys_exit_in_forward_is_a_rejection_not_a_clean_exit(tmp_path: Path) -> None:
    result = _run(tmp_path, "sys_exit.py")
    assert result.stage is Stage.COMPILE
    assert "forward raised SystemExit" in (result.reason or "")


def test_infinite_loop_is_killed_at_the_wall_clock_timeout(tmp_path: Path) -> None:
    start = time.monotonic()
    result = _run(tmp_path, "infinite_loop.py", timeout_s=10.0)
    assert time.monotonic() - start < 25
    assert result.stage is Stage.SANDBOX
    # "during compile" normally; on a badly overloaded machine the clock may run out in setup
    assert (result.reason or "").startswith("killed: wall-clock timeout after 10 s during "), result.reason


def test_memory_bomb_is_killed_at_the_memory_limit(tmp_path: Path) -> None:
    result = _run(tmp_path, "memory_bomb.py", memory_mb=1024)
    reason = result.reason or ""
    # The RSS poll normally wins; RLIMIT_DATA (2x the limit) is the backstop that raises MemoryError.
    assert (result.stage is Stage.SANDBOX and reason.startswith("killed: memory limit 1024 MB exceeded")) or (
        "MemoryError" in reason
    ), reason


def test_fork_bomb_is_killed_at_the_process_limit_and_leaves_no_children(tmp_path: Path) -> None:
    result = _run(tmp_path, "fork_bomb.py", max_processes=40)
    assert result.stage is Stage.SANDBOX
    assert (result.reason or "").startswith("killed: process/thread limit 40 exceeded"), result.reason


def test_thread_bomb_is_killed_at_the_process_limit(tmp_path: Path) -> None:
    result = _run(tmp_path, "thread_bomb.py", max_processes=40)
    assert result.stage is Stage.SANDBOX
    assert (result.reason or "").startswith("killed: process/thread limit 40 exceeded"), result.reason


def test_ten_megabytes_of_output_hits_the_output_limit_and_keeps_a_bounded_tail(tmp_path: Path) -> None:
    result = _run(tmp_path, "chatty.py", output_mb=8)
    assert result.stage is Stage.SANDBOX
    assert result.reason == "killed: output limit 8 MB exceeded on stdout/stderr during compile"
    assert "spam" in result.log_tail
    assert len(result.log_tail) < 10_000


def test_exception_in_forward_is_a_compile_rejection_with_the_message(tmp_path: Path) -> None:
    result = _run(tmp_path, "raises.py")
    assert result.stage is Stage.COMPILE
    assert "RuntimeError: deliberate failure in forward" in (result.reason or "")
    assert "raises.py" in (result.reason or "")  # the failing line of the candidate is named
    assert "deliberate failure" in result.log_tail


def test_worker_environment_is_scrubbed_and_runs_in_a_temp_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-secret")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "also-secret")
    result = _run(tmp_path, "env_leak.py")
    reason = result.reason or ""
    env_keys = reason.split("ENV=", 1)[1].split(" ", 1)[0].split(",")
    assert "PATH" in env_keys and "HOME" in env_keys
    assert "ANTHROPIC_API_KEY" not in env_keys and "AWS_SECRET_ACCESS_KEY" not in env_keys
    assert "sk-ant-test-secret" not in reason + result.log_tail
    home = reason.split(" HOME=", 1)[1].split(" ", 1)[0]
    cwd = reason.split(" CWD=", 1)[1].split(" ", 1)[0].rstrip(")")
    assert home != os.path.expanduser("~") and "kernelevolve-" in home
    assert "kernelevolve-" in cwd and not Path(cwd).exists()  # removed afterwards


def test_worker_has_no_network_even_to_loopback(tmp_path: Path) -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    server.settimeout(0.1)
    port = server.getsockname()[1]
    problem = tmp_path / "problem.py"
    problem.write_text(PROBLEM.read_text() + f"\nPORT = {port}\n")
    try:
        result = _run(tmp_path, "network.py", problem=problem)
        with pytest.raises(TimeoutError):
            server.accept()
    finally:
        server.close()
    assert "NETWORK BLOCKED" in (result.reason or ""), result.reason
    assert not any(w.startswith("network isolation unavailable") for w in result.warnings)


def test_cancel_kills_the_worker_promptly(tmp_path: Path) -> None:
    cancel = threading.Event()
    timers: list[threading.Timer] = []
    fired: list[float] = []

    def fire() -> None:
        fired.append(time.monotonic())
        cancel.set()

    def on_stage(stage: Stage) -> None:
        if stage is Stage.COMPILE:  # the loop is about to start: cancel a moment later
            timers.append(threading.Timer(1.0, fire))
            timers[-1].start()

    result = evaluate(
        PROBLEM,
        (CORPUS / "infinite_loop.py").read_text(),
        _config(tmp_path),
        cancel=cancel,
        on_stage=on_stage,
    )
    returned = time.monotonic()
    for t in timers:
        t.cancel()
    assert fired, "the worker never reached compile"
    assert returned - fired[0] < 5  # SIGTERM, 0.5 s grace, SIGKILL, reap
    assert result.stage is Stage.SANDBOX
    assert result.reason == "cancelled during compile"
    assert _leftovers(str(tmp_path / "cache")) == []


def test_result_file_forged_by_the_candidate_is_not_believed(tmp_path: Path) -> None:
    result = _run(tmp_path, "forged_result.py")
    assert result.stage is Stage.SANDBOX
    assert (result.reason or "").startswith("a result file not written by the worker was found (forged?)")


def test_killed_caller_takes_its_worker_along_and_its_job_directory_is_swept(tmp_path: Path) -> None:
    from kernelevolve.search.harness import jobs_dir, sweep_orphans

    script = tmp_path / "caller.py"
    script.write_text(
        "import sys\n"
        "from pathlib import Path\n"
        "from kernelevolve.search.config import EvalConfig, SandboxLimits\n"
        "from kernelevolve.search.harness import evaluate\n"
        f"config = EvalConfig(device='cpu', skip_timing=True, static_checks=False, cache_dir={str(tmp_path / 'cache')!r},\n"
        "                     limits=SandboxLimits(timeout_s=120))\n"
        f"evaluate(Path({str(PROBLEM)!r}), Path({str(CORPUS / 'infinite_loop.py')!r}).read_text(), config)\n"
    )
    caller = subprocess.Popen([sys.executable, str(script)])
    marker = str(tmp_path / "cache")
    try:
        deadline = time.monotonic() + 60
        while not _leftovers(marker) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _leftovers(marker), "the worker never started"
        owned = [d for d in jobs_dir().glob("kernelevolve-*") if _owner_pid(d) == caller.pid]
        assert owned
    finally:
        caller.kill()
        caller.wait()
    deadline = time.monotonic() + 10
    while _leftovers(marker) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _leftovers(marker) == []  # PR_SET_PDEATHSIG: the worker died with its caller
    removed = sweep_orphans(jobs_dir())
    assert all(d in removed and not d.exists() for d in owned)


def _owner_pid(root: Path) -> int | None:
    try:
        return int((root / "owner").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
