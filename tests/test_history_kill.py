"""Crash safety: writers SIGKILLed at random moments lose nothing they reported as committed.

Each writer is a real subprocess that loops over the whole write API and prints one line to
stdout only after a write's transaction has returned. The test kills it (and a second writer on
the same file) at random moments, including during the very first open and migration, then
checks that the file passes ``PRAGMA integrity_check`` and holds every reported row.
"""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

from kernelevolve.search.history import History

WRITER = r"""
import sys
from kernelevolve.search.history import History
from kernelevolve.search.results import (
    EvalResult, Fingerprint, InputSetResult, ShapeTiming, Stage, TimingKind, TimingStats, Verdict,
)

tag = sys.argv[2]
history = History(sys.argv[1])
print("opened", flush=True)
fp = Fingerprint(device="cpu (Triton interpreter)", driver=None, cuda=None, torch="t", triton="t", python="p")
stats = TimingStats(1.0, 0.9, 0.95, 1.05, 10)
seq = 0
while True:
    run = history.create_run(kind="evolve", problem_path="/tmp/p.py", problem_hash=tag, signature="s",
                             strategy="greedy", config={"tag": tag}, device="cpu", timing_kind="modelled")
    print("run", run, flush=True)
    parent = None
    for step in range(3):
        source = f"# {tag} {run} {step}\n" * 50
        cid = history.add_candidate(run_id=run, parent_id=parent, operator="tune", source=source, step=step)
        print("candidate", cid, flush=True)
        result = EvalResult(
            verdict=Verdict.CORRECT, stage=Stage.DONE, timing_kind=TimingKind.MODELLED,
            input_sets=[InputSetResult("seed:0", [[64]], ["float32"], True, 0.0, 0.0)],
            timings=[ShapeTiming("seed:0", [[64]], TimingKind.MODELLED, stats, TimingStats(2, 2, 2, 2, 1))],
            fingerprint=fp,
        )
        history.record_evaluation(cid, result, fitness=2.0)
        print("evaluated", cid, flush=True)
        seq += 1
        history.add_event(run, "candidate_evaluated", {"tag": tag, "seq": seq})
        print("event", seq, flush=True)
        parent = cid
    history.finish_run(run, status="finished", reason="done", best_candidate_id=parent)
    print("finished", run, flush=True)
"""


class Writer:
    def __init__(self, db: Path, tag: str) -> None:
        self.tag = tag
        self.lines: list[list[str]] = []
        self.proc = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(db), tag],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.endswith("\n"):  # a line cut by the kill was never fully reported
                self.lines.append(line.split())

    def kill(self) -> str:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)
        self._reader.join(timeout=30)
        assert self.proc.stderr is not None
        return self.proc.stderr.read()


def check_reported_rows(db: Path, writers: list[Writer]) -> int:
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        checked = 0
        for writer in writers:
            for words in writer.lines:
                what, value = words[0], words[-1]
                if what == "opened":
                    continue
                if what == "run":
                    row = conn.execute("SELECT problem_hash FROM runs WHERE id = ?", [int(value)]).fetchone()
                    assert row == (writer.tag,), (what, value)
                elif what == "candidate":
                    row = conn.execute("SELECT id FROM candidates WHERE id = ?", [int(value)]).fetchone()
                    assert row is not None, (what, value)
                elif what == "evaluated":
                    row = conn.execute(
                        "SELECT status, verdict, fitness FROM candidates WHERE id = ?", [int(value)]
                    ).fetchone()
                    assert row == ("evaluated", "correct", 2.0), (what, value)
                elif what == "event":
                    row = conn.execute(
                        "SELECT count(*) FROM events WHERE json_extract(payload, '$.tag') = ? "
                        "AND json_extract(payload, '$.seq') = ?",
                        [writer.tag, int(value)],
                    ).fetchone()
                    assert row == (1,), (what, value)
                elif what == "finished":
                    row = conn.execute("SELECT status FROM runs WHERE id = ?", [int(value)]).fetchone()
                    assert row == ("finished",), (what, value)
                else:  # pragma: no cover
                    raise AssertionError(f"unexpected writer line {what} {value}")
                checked += 1
        return checked
    finally:
        conn.close()


def test_sigkilled_writers_lose_nothing_they_reported(tmp_path: Path) -> None:
    db = tmp_path / "history.db"
    rng = random.Random(int(os.environ.get("KE_KILL_SEED", "20261202")))
    total_checked = 0
    for round_no in range(6):
        writers = [Writer(db, f"r{round_no}w{i}") for i in range(2)]
        if round_no == 0:
            # Kill early, often while the fresh file is still being created and migrated.
            time.sleep(rng.uniform(0.05, 0.4))
        else:
            # Let each writer report a random number of writes (however loaded the machine is),
            # then kill at a random moment within the next write or so.
            target = rng.randint(2, 40)
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and any(
                len(w.lines) < target and w.proc.poll() is None for w in writers
            ):
                time.sleep(0.005)
            time.sleep(rng.uniform(0.0, 0.02))
        for writer in writers:
            stderr = writer.kill()
            assert "Traceback" not in stderr, stderr
        total_checked += check_reported_rows(db, writers)
    # The file still opens through History (WAL recovered, schema intact) and accepts writes.
    with History(db) as history:
        run_id = history.create_run(
            kind="eval", problem_path="/tmp/p.py", problem_hash="after", signature=None,
            strategy=None, config={}, device="cpu", timing_kind=None,
        )  # fmt: skip
        assert history.get_run(run_id) is not None
        assert history.query("PRAGMA integrity_check")[0]["integrity_check"] == "ok"
    print(f"checked {total_checked} reported writes across 6 kill rounds")
    assert total_checked > 20  # the writers really wrote between kills
