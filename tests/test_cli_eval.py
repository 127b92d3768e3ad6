"""`kernelevolve eval` end to end: the installed script, the real harness (Triton interpreter on the
CPU), and the SQLite file it writes. Problems and candidates are tiny files in tests/data/cli."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data" / "cli"
PROBLEM = DATA / "problem_add_relu.py"
HONEST = DATA / "candidate_add_relu.py"
WRONG = DATA / "candidate_wrong.py"

pytestmark = pytest.mark.slow  # each evaluation runs the Triton interpreter in a sandboxed worker


def kernelevolve(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    script = Path(sys.executable).parent / "kernelevolve"
    command = [str(script)] if script.exists() else [sys.executable, "-m", "kernelevolve.server.cli"]
    env = {k: v for k, v in os.environ.items() if k != "KERNELEVOLVE_DEBUG"}
    return subprocess.run(
        [*command, *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=540, check=False
    )


def rows(db: Path, sql: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def test_honest_candidate_is_correct_and_recorded_with_modelled_timing(tmp_path: Path) -> None:
    proc = kernelevolve("eval", str(PROBLEM), str(HONEST), "--json", "--device", "cpu", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)  # stdout is exactly one JSON object, nothing else
    assert isinstance(data, dict)
    assert data["verdict"] == "correct", (data["stage"], data["reason"])
    assert (data["stage"], data["reason"], data["timing"]) == ("done", None, "modelled")
    for key in ("speedup", "speedup_vs_eager", "roofline_fraction"):
        assert isinstance(data[key], float) and data[key] > 0, key
    assert "speedup_vs_compile" in data
    assert data["device"] == data["fingerprint"]["device"]
    assert data["fingerprint"]["triton"] and data["fingerprint"]["torch"]
    names = [s["name"] for s in data["input_sets"]]
    assert {"seed:0", "seed:1", "seed:2", "test:0", "test:1"} <= set(names)
    assert all(s["passed"] for s in data["input_sets"])
    assert all(t["kind"] == "modelled" for t in data["timings"])

    # The default database is .kernelevolve/history.db under the current folder, and holds it all.
    db = tmp_path / ".kernelevolve" / "history.db"
    assert data["db"] == str(db)
    (run,) = rows(db, "SELECT id, kind, status, best_candidate_id, timing_kind, problem_path FROM runs")
    assert run == (
        data["run_id"],
        "eval",
        "finished",
        data["candidate_id"],
        "modelled",
        str(PROBLEM.resolve()),
    )
    (cand,) = rows(db, "SELECT id, status, verdict, operator, source, fitness, speedup FROM candidates")
    assert cand[:5] == (data["candidate_id"], "evaluated", "correct", "user", HONEST.read_text())
    assert cand[5] == pytest.approx(data["speedup"]) and cand[6] == pytest.approx(data["speedup"])
    assert rows(db, "PRAGMA integrity_check") == [("ok",)]

    # `show` reads the same row back.
    shown = kernelevolve("show", str(data["candidate_id"]), "--json", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    detail = json.loads(shown.stdout)
    assert detail["source"] == HONEST.read_text()
    assert detail["speedup"] == pytest.approx(data["speedup"])


def test_wrong_candidate_is_rejected_but_still_exits_0_and_is_recorded(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    proc = kernelevolve("eval", str(PROBLEM), str(WRONG), "--db", str(db), "--device", "cpu", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "rejected at correctness" in out
    assert "\x1b[" not in out  # plain text when stdout is not a terminal
    assert proc.stderr == ""  # no spinner when stderr is not a terminal
    ((status, verdict, stage, reason, fitness),) = rows(
        db, "SELECT status, verdict, stage, reason, fitness FROM candidates"
    )
    assert (status, verdict, stage, fitness) == ("evaluated", "rejected", "correctness", 0.0)
    assert isinstance(reason, str) and reason in out
    assert rows(db, "SELECT status, best_candidate_id FROM runs") == [("finished", None)]
    events = rows(db, "SELECT kind, json_extract(payload, '$.verdict') FROM events")
    assert events == [("candidate_evaluated", "rejected")]


def test_worker_past_its_timeout_is_a_recorded_rejection_with_a_spinner_on_a_terminal(tmp_path: Path) -> None:
    import pty

    db = tmp_path / "h.db"
    script = Path(sys.executable).parent / "kernelevolve"
    command = [str(script)] if script.exists() else [sys.executable, "-m", "kernelevolve.server.cli"]
    args = [
        "eval",
        str(PROBLEM),
        str(HONEST),
        "--json",
        "--db",
        str(db),
        "--device",
        "cpu",
        "--timeout",
        "0.3",
    ]
    master, slave = pty.openpty()  # stderr is a terminal, stdout a pipe: spinner there, JSON here
    try:
        proc = subprocess.run(
            [*command, *args], stdout=subprocess.PIPE, stderr=slave, text=True, cwd=tmp_path, timeout=120
        )
        os.close(slave)
        terminal = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the pty's other end is closed
                break
            if not chunk:
                break
            terminal += chunk
    finally:
        os.close(master)
    assert proc.returncode == 0
    assert b"Evaluating candidate_add_relu.py against problem_add_relu.py" in terminal
    data = json.loads(proc.stdout)
    assert (data["verdict"], data["stage"]) == ("rejected", "sandbox")
    assert data["speedup"] is None
    assert "time" in (data["reason"] or "").lower()
    assert rows(db, "SELECT verdict, stage FROM candidates") == [("rejected", "sandbox")]
    assert json.loads(str(rows(db, "SELECT config FROM runs")[0][0]))["eval"]["limits"]["timeout_s"] == 0.3


def test_ctrl_c_cancels_the_worker_and_records_a_cancelled_run(tmp_path: Path) -> None:
    import signal
    import time

    import psutil

    db = tmp_path / "h.db"
    script = Path(sys.executable).parent / "kernelevolve"
    command = [str(script)] if script.exists() else [sys.executable, "-m", "kernelevolve.server.cli"]
    proc = subprocess.Popen(
        [*command, "eval", str(PROBLEM), str(HONEST), "--json", "--db", str(db), "--device", "cpu"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    try:
        deadline = time.monotonic() + 60
        workers: list[psutil.Process] = []
        while not workers and time.monotonic() < deadline and proc.poll() is None:
            workers = psutil.Process(proc.pid).children(recursive=True)
            time.sleep(0.05)
        assert workers, "the evaluation finished before it could be interrupted"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130
    assert out == ""
    assert err.strip().splitlines()[-1] == "kernelevolve: interrupted"
    psutil.wait_procs(workers, timeout=10)
    assert not [w for w in workers if w.is_running() and w.status() != psutil.STATUS_ZOMBIE]
    assert rows(db, "SELECT status, reason FROM runs") == [("cancelled", "interrupted")]
    assert rows(db, "SELECT status FROM candidates") == [("pending",)]
