"""History: the runs/candidates/events API on a real SQLite file, and its schema migrations."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest
import sqlite_utils
from kernelevolve.search import migrations as migrations_module
from kernelevolve.search.history import History, HistoryError, SchemaTooNew
from kernelevolve.search.migrations import MIGRATIONS, Migration, MigrationConflict, register
from kernelevolve.search.results import (
    EvalResult,
    Fingerprint,
    InputSetResult,
    Roofline,
    ShapeTiming,
    Stage,
    TimingKind,
    TimingStats,
    Verdict,
)

V1 = MIGRATIONS[0]


def make_result(
    candidate_ms: float = 1.0,
    *,
    correct: bool = True,
    kind: TimingKind = TimingKind.MODELLED,
    device: str = "cpu (Triton interpreter)",
) -> EvalResult:
    fingerprint = Fingerprint(
        device=device, driver=None, cuda=None, torch="2.13.0", triton="3.9.0", python="3.11.7"
    )
    if not correct:
        return EvalResult(
            verdict=Verdict.REJECTED,
            stage=Stage.CORRECTNESS,
            reason="seed:1: max abs error 0.5 > atol 1e-4",
            input_sets=[InputSetResult("seed:1", [[8, 8]], ["float32"], False, 0.5, 0.5, "mismatch")],
            fingerprint=fingerprint,
        )
    stats = TimingStats(candidate_ms, candidate_ms * 0.9, candidate_ms * 0.95, candidate_ms * 1.05, 50)
    eager = TimingStats(2.0, 1.9, 1.95, 2.05, 50)
    compiled = TimingStats(1.5, 1.4, 1.45, 1.55, 50)
    return EvalResult(
        verdict=Verdict.CORRECT,
        stage=Stage.DONE,
        timing_kind=kind,
        input_sets=[InputSetResult("seed:0", [[8, 8]], ["float32"], True, 1e-7, 1e-6)],
        timings=[
            ShapeTiming(
                "seed:0",
                [[8, 8]],
                kind,
                stats,
                eager,
                compiled,
                roofline=Roofline("nvidia-h200", 512, 64, 0.25, "memory"),
            )
        ],
        fingerprint=fingerprint,
    )


@pytest.fixture
def history(tmp_path: Path) -> History:
    h = History(tmp_path / "nested" / "history.db")
    yield h  # type: ignore[misc]
    h.close()


def new_run(
    history: History, problem: str = "problem.py", signature: str | None = "sig", kind: str = "evolve"
) -> int:
    return history.create_run(
        kind=kind,
        problem_path=problem,
        problem_hash="hash-1",
        signature=signature,
        strategy="greedy",
        config={"max_steps": 4},
        device="cpu",
        timing_kind="modelled",
    )


def test_creates_parent_folders_in_wal_mode_with_foreign_keys(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "history.db"
    with History(path) as h:
        assert path.exists()
        assert h.query("PRAGMA journal_mode")[0]["journal_mode"] == "wal"
        assert h.query("PRAGMA foreign_keys")[0]["foreign_keys"] == 1
        assert h.query("PRAGMA synchronous")[0]["synchronous"] == 2  # FULL
        assert {"runs", "candidates", "events", "schema_version"} <= set(h.db.table_names())
        indexed = {tuple(i.columns) for i in h.db.table("candidates").indexes}
        assert {("run_id",), ("source_hash",)} <= indexed
        assert ("signature",) in {tuple(i.columns) for i in h.db.table("runs").indexes}
        assert h.schema_versions()[1] == V1.name


def test_run_round_trip_with_absolute_problem_path(history: History, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    run_id = new_run(history, problem="problem.py")
    run = history.get_run(run_id)
    assert run is not None
    assert run.problem_path == str((tmp_path / "problem.py").resolve())
    assert (run.status, run.config, run.finished_at) == ("running", {"max_steps": 4}, None)
    history.finish_run(
        run_id, status="finished", reason="max steps", best_candidate_id=None, device="NVIDIA H200"
    )
    run = history.get_run(run_id)
    assert run is not None
    assert (run.status, run.reason, run.device) == ("finished", "max steps", "NVIDIA H200")
    assert run.finished_at is not None
    assert [r.id for r in history.list_runs(problem_path=str(tmp_path / "problem.py"))] == [run_id]
    assert history.get_run(run_id + 100) is None


def test_list_runs_is_newest_first_and_limited(history: History) -> None:
    ids = [new_run(history) for _ in range(5)]
    assert [r.id for r in history.list_runs(limit=3)] == ids[::-1][:3]


def test_rejects_unknown_run_kind_and_status(history: History) -> None:
    with pytest.raises(ValueError, match="run kind"):
        new_run(history, kind="bogus")
    run_id = new_run(history)
    with pytest.raises(ValueError, match="status"):
        history.finish_run(run_id, status="running", reason="", best_candidate_id=None)
    with pytest.raises(HistoryError, match="run 999 does not exist"):
        history.finish_run(999, status="failed", reason="x", best_candidate_id=None)


def test_candidate_diff_is_against_parent_or_empty_file(history: History) -> None:
    run_id = new_run(history)
    draft = history.add_candidate(run_id=run_id, parent_id=None, operator="template", source="a = 1\nb = 2\n")
    child = history.add_candidate(
        run_id=run_id, parent_id=draft, operator="tune", source="a = 1\nb = 3", note="BLOCK 64", step=1
    )
    draft_rec = history.get_candidate(draft)
    child_rec = history.get_candidate(child)
    assert draft_rec is not None and child_rec is not None
    assert draft_rec.diff.splitlines()[:2] == ["--- empty", f"+++ candidate {draft}"]
    assert "+a = 1" in draft_rec.diff
    assert child_rec.diff.splitlines() == [
        f"--- candidate {draft}",
        f"+++ candidate {child}",
        "@@ -1,2 +1,2 @@",
        " a = 1",
        "-b = 2",
        "+b = 3",
    ]
    assert (child_rec.status, child_rec.note, child_rec.step, child_rec.result) == (
        "pending",
        "BLOCK 64",
        1,
        None,
    )
    assert history.find_candidate_by_hash(run_id, child_rec.source_hash) == child_rec
    assert history.find_candidate_by_hash(run_id, "0" * 64) is None


def test_add_candidate_to_missing_run_or_parent_fails_and_writes_nothing(history: History) -> None:
    with pytest.raises(HistoryError, match="run 7 does not exist"):
        history.add_candidate(run_id=7, parent_id=None, operator="x", source="s")
    run_id = new_run(history)
    with pytest.raises(HistoryError, match="parent candidate 42"):
        history.add_candidate(run_id=run_id, parent_id=42, operator="x", source="s")
    assert history.query("SELECT count(*) AS n FROM candidates")[0]["n"] == 0


def test_record_evaluation_keeps_every_metric_and_the_full_result(history: History) -> None:
    run_id = new_run(history)
    cid = history.add_candidate(run_id=run_id, parent_id=None, operator="user", source="s")
    result = make_result(0.5)
    history.record_evaluation(cid, result, fitness=3.0)
    rec = history.get_candidate(cid)
    assert rec is not None and rec.result is not None
    assert rec.result.to_dict() == result.to_dict()
    assert (rec.status, rec.verdict, rec.stage, rec.timing_kind) == (
        "evaluated",
        "correct",
        "done",
        "modelled",
    )
    assert rec.speedup == pytest.approx(3.0)  # best baseline 1.5 ms / 0.5 ms
    assert rec.speedup_vs_eager == pytest.approx(4.0)
    assert rec.speedup_vs_compile == pytest.approx(3.0)
    assert rec.roofline_fraction == pytest.approx(0.5)
    assert rec.fitness == 3.0
    assert rec.device == "cpu (Triton interpreter)"
    assert rec.fingerprint == result.fingerprint
    assert rec.input_sets[0].name == "seed:0"
    assert rec.timings[0].eager.median_ms == 2.0
    assert rec.evaluated_at is not None
    # The searchable columns hold JSON too.
    row = history.query(
        "SELECT json_extract(fingerprint, '$.torch') AS t FROM candidates WHERE id = ?", [cid]
    )
    assert row[0]["t"] == "2.13.0"


def test_rejected_evaluation_records_stage_and_reason(history: History) -> None:
    run_id = new_run(history)
    cid = history.add_candidate(run_id=run_id, parent_id=None, operator="user", source="s")
    history.record_evaluation(cid, make_result(correct=False), fitness=0.0)
    rec = history.get_candidate(cid)
    assert rec is not None
    assert (rec.verdict, rec.stage, rec.speedup, rec.timing_kind) == ("rejected", "correctness", None, None)
    assert rec.reason is not None and "max abs error" in rec.reason
    assert not rec.input_sets[0].passed


def test_evaluating_a_candidate_twice_is_an_error(history: History) -> None:
    run_id = new_run(history)
    cid = history.add_candidate(run_id=run_id, parent_id=None, operator="user", source="s")
    history.record_evaluation(cid, make_result(1.0), fitness=1.5)
    with pytest.raises(HistoryError, match="already evaluated"):
        history.record_evaluation(cid, make_result(0.1), fitness=15.0)
    rec = history.get_candidate(cid)
    assert rec is not None and rec.fitness == 1.5
    with pytest.raises(HistoryError, match="does not exist"):
        history.record_evaluation(999, make_result(), fitness=1.0)


def test_best_candidate_picks_highest_fitness_among_correct(history: History) -> None:
    run_id = new_run(history)
    assert history.best_candidate(run_id) is None
    fitnesses = {}
    for ms, correct in [(1.0, True), (0.3, False), (0.5, True), (0.75, True)]:
        cid = history.add_candidate(run_id=run_id, parent_id=None, operator="x", source=f"# {ms} {correct}")
        result = make_result(ms, correct=correct)
        fitness = result.speedup or 0.0
        history.record_evaluation(cid, result, fitness)
        fitnesses[cid] = fitness
    history.add_candidate(run_id=run_id, parent_id=None, operator="x", source="pending")
    best = history.best_candidate(run_id)
    assert best is not None and best.source == "# 0.5 True"
    assert history.count_candidates(run_id) == {"total": 5, "evaluated": 4, "correct": 3}
    assert [c.source for c in history.list_candidates(run_id, status="pending")] == ["pending"]
    assert len(history.list_candidates(run_id)) == 5


def test_best_for_signature_filters_timing_kind_and_stale(history: History) -> None:
    measured_run = new_run(history, signature="softmax|float32[8x8]")
    modelled_run = new_run(history, signature="softmax|float32[8x8]")
    other_run = new_run(history, signature="other")
    m = history.add_candidate(run_id=measured_run, parent_id=None, operator="x", source="m")
    history.record_evaluation(m, make_result(1.0, kind=TimingKind.MEASURED, device="NVIDIA H200"), 1.5)
    d = history.add_candidate(run_id=modelled_run, parent_id=None, operator="x", source="d")
    history.record_evaluation(d, make_result(0.5), 3.0)
    o = history.add_candidate(run_id=other_run, parent_id=None, operator="x", source="o")
    history.record_evaluation(o, make_result(0.1), 15.0)

    best = history.best_for_signature("softmax|float32[8x8]")
    assert best is not None and best.id == d
    best = history.best_for_signature("softmax|float32[8x8]", timing_kind="measured")
    assert best is not None and best.id == m
    history.mark_stale(d, "problem edited")
    best = history.best_for_signature("softmax|float32[8x8]")
    assert best is not None and best.id == m
    best = history.best_for_signature("softmax|float32[8x8]", include_stale=True)
    assert best is not None and best.id == d
    assert history.best_for_signature("nothing") is None


def test_best_for_problem_gives_one_best_per_device_and_timing_kind(history: History, tmp_path: Path) -> None:
    problem = str(tmp_path / "p.py")
    run_a = new_run(history, problem=problem)
    run_b = new_run(history, problem=problem)
    elsewhere = new_run(history, problem=str(tmp_path / "q.py"))
    ids = {}
    for run_id, name, ms, kind, device in [
        (run_a, "gpu-slow", 1.0, TimingKind.MEASURED, "NVIDIA H200"),
        (run_b, "gpu-fast", 0.5, TimingKind.MEASURED, "NVIDIA H200"),
        (run_a, "cpu", 0.25, TimingKind.MODELLED, "cpu (Triton interpreter)"),
        (elsewhere, "other-file", 0.01, TimingKind.MEASURED, "NVIDIA H200"),
    ]:
        cid = history.add_candidate(run_id=run_id, parent_id=None, operator="x", source=name)
        result = make_result(ms, kind=kind, device=device)
        history.record_evaluation(cid, result, result.speedup or 0.0)
        ids[name] = cid
    assert [c.source for c in history.best_for_problem(problem)] == ["gpu-fast", "cpu"]
    history.mark_stale(ids["gpu-fast"], "edited")
    assert [(c.source, c.stale) for c in history.best_for_problem(problem)] == [
        ("gpu-slow", False),
        ("cpu", False),
        ("gpu-fast", True),
    ]
    assert [c.source for c in history.best_for_problem(problem, include_stale=False)] == ["gpu-slow", "cpu"]


def test_mark_stale_for_problem_marks_runs_of_other_versions(history: History, tmp_path: Path) -> None:
    problem = str(tmp_path / "p.py")
    old = new_run(history, problem=problem)  # problem_hash "hash-1"
    current = history.create_run(
        kind="eval", problem_path=problem, problem_hash="hash-2", signature=None, strategy=None,
        config={}, device="cpu", timing_kind=None,
    )  # fmt: skip
    a = history.add_candidate(run_id=old, parent_id=None, operator="x", source="a")
    b = history.add_candidate(run_id=current, parent_id=None, operator="x", source="b")
    assert history.mark_stale_for_problem(problem, "hash-2", "problem changed") == 1
    rec_a, rec_b = history.get_candidate(a), history.get_candidate(b)
    assert rec_a is not None and rec_b is not None
    assert (rec_a.stale, rec_a.stale_reason, rec_b.stale) == (True, "problem changed", False)
    with pytest.raises(HistoryError):
        history.mark_stale(12345, "x")


def test_events_round_trip_in_order(history: History) -> None:
    run_id = new_run(history)
    history.add_event(run_id, "run_started", {"strategy": "greedy"})
    history.add_event(run_id, "new_best", {"candidate_id": 3, "speedup": 1.25})
    history.add_event(None, "notice", {"message": "no API key"})
    events = history.list_events(run_id)
    assert [(e["kind"], e["payload"]) for e in events] == [
        ("run_started", {"strategy": "greedy"}),
        ("new_best", {"candidate_id": 3, "speedup": 1.25}),
    ]
    with pytest.raises(HistoryError):
        history.add_event(999, "x", {})


def test_failed_transaction_rolls_back_every_statement(history: History) -> None:
    run_id = new_run(history)
    with pytest.raises(RuntimeError), history.transaction() as db:
        db.table("events").insert({"run_id": run_id, "kind": "a", "payload": "{}", "created_at": "t"})
        with history.transaction() as inner:  # nested: a savepoint of the outer transaction
            inner.table("events").insert({"run_id": run_id, "kind": "b", "payload": "{}", "created_at": "t"})
        raise RuntimeError("boom")
    assert history.list_events(run_id) == []


def test_threads_share_one_history(history: History) -> None:
    run_id = new_run(history)
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            for i in range(20):
                cid = history.add_candidate(
                    run_id=run_id, parent_id=None, operator=f"t{n}", source=f"{n}-{i}"
                )
                history.record_evaluation(cid, make_result(1.0 + i), fitness=1.0)
                history.add_event(run_id, "candidate_evaluated", {"candidate_id": cid})
                history.best_candidate(run_id)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert history.count_candidates(run_id) == {"total": 80, "evaluated": 80, "correct": 80}
    assert len(history.list_events(run_id)) == 80


def test_closed_history_refuses_use(tmp_path: Path) -> None:
    h = History(tmp_path / "h.db")
    h.close()
    h.close()  # idempotent
    with pytest.raises(HistoryError, match="closed"):
        h.list_runs()


# -- migrations ------------------------------------------------------------------------------------


def test_migrations_apply_once_in_version_order(tmp_path: Path) -> None:
    calls: list[int] = []

    def make(version: int) -> Migration:
        def apply(db: sqlite_utils.Database) -> None:
            calls.append(version)
            db.table(f"feature_{version}").create({"id": int}, pk="id")

        return Migration(version, f"feature {version}", apply)

    path = tmp_path / "h.db"
    History(path, migrations=[V1, make(3), make(2)]).close()
    assert calls == [2, 3]
    with History(path, migrations=[V1, make(2), make(3)]) as h:
        assert calls == [2, 3]
        assert sorted(h.schema_versions()) == [1, 2, 3]
        assert {"feature_2", "feature_3"} <= set(h.db.table_names())


def test_failing_migration_leaves_no_trace(tmp_path: Path) -> None:
    def broken(db: sqlite_utils.Database) -> None:
        db.table("half_made").create({"id": int}, pk="id")
        raise RuntimeError("migration bug")

    path = tmp_path / "h.db"
    with pytest.raises(RuntimeError, match="migration bug"):
        History(path, migrations=[V1, Migration(2, "broken", broken)])
    with History(path, migrations=[V1]) as h:
        assert "half_made" not in h.db.table_names()
        assert sorted(h.schema_versions()) == [1]
        assert "runs" in h.db.table_names()


def test_database_newer_than_code_gives_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "h.db"
    History(path, migrations=[V1, Migration(2, "from the future", lambda db: None)]).close()
    with pytest.raises(SchemaTooNew, match=r"schema version 2 \(from the future\), newer than .*\(up to 1\)"):
        History(path, migrations=[V1])


def test_file_that_is_not_a_database_gives_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "h.db"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(HistoryError, match="not a usable kernelevolve history database"):
        History(path)
    assert path.read_bytes() == b"this is not sqlite" * 100


def test_register_is_idempotent_and_refuses_version_clashes() -> None:
    before = list(MIGRATIONS)
    assert register(V1) is V1
    with pytest.raises(MigrationConflict, match="schema version 1"):
        register(Migration(1, "someone else's", lambda db: None))
    with pytest.raises(ValueError):
        register(Migration(0, "zero", lambda db: None))
    assert before == MIGRATIONS


def test_registry_lists_the_feature_modules_that_own_later_versions() -> None:
    assert migrations_module.FEATURE_MODULES == (
        "kernelevolve.search.history_lsp",
        "kernelevolve.search.history_llm",
    )
    versions = [m.version for m in MIGRATIONS]
    assert versions == sorted(versions) and versions[0] == 1


def test_two_processes_opening_a_fresh_file_migrate_it_once(tmp_path: Path) -> None:
    import subprocess
    import sys

    path = tmp_path / "h.db"
    code = "import sys; from kernelevolve.search.history import History; History(sys.argv[1]).close()"
    procs = [subprocess.Popen([sys.executable, "-c", code, str(path)]) for _ in range(3)]
    assert [p.wait(timeout=60) for p in procs] == [0, 0, 0]
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("SELECT count(*) FROM schema_version WHERE version = 1").fetchone()[0] == 1
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        conn.close()


def test_a_write_through_query_is_committed_and_never_left_open(tmp_path: Path) -> None:
    path = tmp_path / "h.db"
    with History(path) as h:
        run_id = new_run(h)
        h.query("UPDATE runs SET reason = 'edited' WHERE id = ?", [run_id])
        # A second connection (another process) sees it at once, and can write.
        other = sqlite3.connect(path, timeout=5)
        try:
            assert other.execute("SELECT reason FROM runs").fetchone() == ("edited",)
            other.execute("UPDATE runs SET reason = 'other' WHERE id = ?", [run_id])
            other.commit()
        finally:
            other.close()
        with pytest.raises(sqlite3.OperationalError):
            h.query("INSERT INTO no_such_table VALUES (1)")
        h.add_event(run_id, "after", {})
        assert [e["kind"] for e in h.list_events(run_id)] == ["after"]
