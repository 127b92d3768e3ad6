"""Checkpoint and resume: SIGKILL a real `kernelevolve evolve` mid-search, then --resume it."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import time
from collections import Counter
from pathlib import Path
from typing import Any

import psutil
import pytest
from engine_support import CLI, POOR_SEED, PROBLEM, cli

pytestmark = pytest.mark.slow
MAX_STEPS = 3


def rows(db: Path) -> dict[int, dict[str, Any]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    conn.row_factory = sqlite3.Row
    try:
        found = conn.execute(
            "SELECT id, status, source_hash, result, evaluated_at FROM candidates WHERE run_id = 1 ORDER BY id"
        ).fetchall()
    except sqlite3.OperationalError:  # tables not created yet
        return {}
    finally:
        conn.close()
    return {r["id"]: dict(r) for r in found}


def test_sigkill_mid_search_then_resume_loses_and_repeats_nothing(tmp_path: Path) -> None:
    db = tmp_path / "history.db"
    common = ["--db", str(db), "--out", str(tmp_path / "add_evolved.py"), "--json"]
    proc = subprocess.Popen(
        [*CLI, "evolve", str(PROBLEM), "--seed", str(POOR_SEED), "--max-steps", str(MAX_STEPS),
         "--parallel", "1", "--patience", "10", "--no-warm-start", *common],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    workers: set[int] = set()
    deadline = time.monotonic() + 400
    try:
        while True:  # kill once one evaluation is committed and the next is in flight
            assert proc.poll() is None, "the search ended before it could be killed"
            assert time.monotonic() < deadline, "no evaluation was committed in time"
            workers |= {p.pid for p in psutil.Process(proc.pid).children(recursive=True)}
            statuses = Counter(r["status"] for r in rows(db).values()) if db.exists() else Counter()
            if statuses["evaluated"] >= 1 and statuses["pending"] >= 1:
                break
            time.sleep(0.2)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
        for pid in workers:  # sandboxed workers live in sessions of their own: end them by id
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
    before = rows(db)
    pending = [i for i, r in before.items() if r["status"] == "pending"]
    assert pending, "the kill should have caught an evaluation in flight"

    resumed = cli("evolve", str(PROBLEM), "--resume", "1", *common)
    assert resumed.returncode == 0, resumed.stderr
    summary = json.loads(resumed.stdout.strip().splitlines()[-1])
    after = rows(db)

    for cid, row in before.items():  # nothing committed before the kill changed
        if row["status"] == "evaluated":
            assert after[cid] == row
    assert all(after[cid]["status"] == "evaluated" for cid in pending)
    assert all(r["status"] == "evaluated" for r in after.values())
    assert len({r["source_hash"] for r in after.values()}) == len(after)  # never the same source twice
    assert summary["run_id"] == 1 and summary["status"] == "finished"
    assert summary["evaluated"] == MAX_STEPS == len(after)

    conn = sqlite3.connect(db)
    evaluated_events = Counter(
        json.loads(p)["candidate_id"]
        for (p,) in conn.execute(
            "SELECT payload FROM events WHERE run_id = 1 AND kind = 'candidate_evaluated'"
        )
    )
    conn.close()
    assert set(evaluated_events.values()) == {1} and set(evaluated_events) == set(after)
