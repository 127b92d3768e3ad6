"""The SQLite history of runs, candidates and events (through sqlite-utils).

Durability: WAL journal with ``synchronous=FULL``. In WAL mode a commit appends the transaction to
the ``-wal`` file; with FULL that file is also fsynced before ``COMMIT`` returns. A process killed
at any moment (SIGKILL included) therefore loses nothing committed even with NORMAL, since the
WAL lives in the OS page cache; FULL additionally survives power loss and kernel panics. Our
commits come at the pace of kernel evaluations (seconds each), so the extra fsync costs nothing
that matters, and users of this tool do not forgive lost measurements.

Concurrency: one connection per History, opened with ``check_same_thread=False`` and guarded by a
re-entrant lock, so the engine's worker threads and the language server can share one object.
Several processes may open the same file: every write is a single ``BEGIN IMMEDIATE`` transaction
(the write lock is taken up front, so two writers never deadlock upgrading a read lock) and
waits up to ``busy_timeout_s`` for another process's write to finish; readers never block in WAL.

Other modules that own tables (migrations 2 and 3) use ``transaction()`` and ``query()`` so their
writes share the same lock and transaction discipline.
"""

from __future__ import annotations

import difflib
import json
import math
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import sqlite_utils
from kernelevolve.search.migrations import MIGRATIONS, Migration
from kernelevolve.search.problem import source_hash as compute_source_hash
from kernelevolve.search.results import (
    EvalResult,
    Fingerprint,
    InputSetResult,
    ShapeTiming,
    Verdict,
)

RUN_KINDS = ("evolve", "eval")
RUN_STATUSES = ("running", "finished", "cancelled", "failed")
CANDIDATE_STATUSES = ("pending", "evaluated")


def _enable_wal(conn: sqlite3.Connection, timeout_s: float) -> None:
    """Switch to WAL, retrying while another process holds the file.

    Switching needs an exclusive lock, and SQLite may answer "database is locked" at once, without
    its busy handler, e.g. while another connection rolls back the hot journal that a writer killed
    during creation left behind (seen in tests/test_history_kill.py on a loaded machine).
    """
    deadline = time.monotonic() + timeout_s
    delay = 0.005
    while True:
        try:
            if str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
                conn.execute("PRAGMA journal_mode=wal")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
        time.sleep(delay)
        delay = min(delay * 2, 0.2)


class HistoryError(RuntimeError):
    """The history database cannot be used as asked; the message is one line naming the cause."""


class SchemaTooNew(HistoryError):
    """The database was written by a newer kernelevolve than the one reading it."""


@dataclass(frozen=True)
class RunRecord:
    id: int
    kind: str  # 'evolve' | 'eval'
    problem_path: str
    problem_hash: str
    signature: str | None
    strategy: str | None
    config: dict[str, Any]
    device: str
    timing_kind: str | None
    status: str  # 'running' | 'finished' | 'cancelled' | 'failed'
    reason: str
    best_candidate_id: int | None
    created_at: str
    finished_at: str | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class CandidateRecord:
    id: int
    run_id: int
    parent_id: int | None
    operator: str
    note: str
    step: int
    source: str
    source_hash: str
    diff: str
    status: str  # 'pending' | 'evaluated'
    verdict: str | None
    stage: str | None
    reason: str | None
    result: EvalResult | None
    speedup: float | None
    speedup_vs_eager: float | None
    speedup_vs_compile: float | None
    roofline_fraction: float | None
    fitness: float | None
    timing_kind: str | None
    device: str | None
    stale: bool
    stale_reason: str | None
    created_at: str
    evaluated_at: str | None

    @property
    def correct(self) -> bool:
        return self.verdict == Verdict.CORRECT.value

    @property
    def input_sets(self) -> list[InputSetResult]:
        return self.result.input_sets if self.result else []

    @property
    def timings(self) -> list[ShapeTiming]:
        return self.result.timings if self.result else []

    @property
    def fingerprint(self) -> Fingerprint | None:
        return self.result.fingerprint if self.result else None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: every column, with ``result`` as ``EvalResult.to_dict()``."""
        data = {k: v for k, v in self.__dict__.items() if k != "result"}
        data["result"] = self.result.to_dict() if self.result else None
        return data


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def normalise_path(path: str | Path) -> str:
    """Problem paths are kept absolute and resolved, so the CLI and the editor agree on them."""
    return str(Path(path).expanduser().resolve())


def unified_diff(parent_source: str, source: str, parent_label: str, label: str) -> str:
    def lines(text: str) -> list[str]:
        out = text.splitlines(keepends=True)
        if out and not out[-1].endswith("\n"):
            out[-1] += "\n"
        return out

    return "".join(difflib.unified_diff(lines(parent_source), lines(source), parent_label, label))


class History:
    def __init__(
        self,
        path: Path | str,
        *,
        migrations: Sequence[Migration] | None = None,
        busy_timeout_s: float = 30.0,
    ) -> None:
        self.path = Path(path).expanduser()
        self._lock = threading.RLock()
        self._closed = False
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise HistoryError(f"cannot create the folder of history database {self.path}: {exc}") from exc
        try:
            conn = sqlite3.connect(str(self.path), timeout=busy_timeout_s, check_same_thread=False)
        except sqlite3.Error as exc:
            raise HistoryError(f"cannot open history database {self.path}: {exc}") from exc
        self._conn = conn
        self.db = sqlite_utils.Database(conn)
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
            conn.execute("PRAGMA foreign_keys = ON")
            _enable_wal(conn, busy_timeout_s)
            conn.execute("PRAGMA synchronous = FULL")
            self._migrate(list(MIGRATIONS if migrations is None else migrations))
        except SchemaTooNew:
            conn.close()
            raise
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise HistoryError(f"{self.path} is not a usable kernelevolve history database: {exc}") from exc
        except BaseException:
            conn.close()
            raise

    # -- plumbing shared with the feature modules -------------------------------------------------

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                self._conn.close()

    def __enter__(self) -> History:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite_utils.Database]:
        """One atomic write. Nested calls on the same thread become savepoints of the outer one."""
        with self._lock:
            self._check_open()
            if self._conn.in_transaction:
                with self.db.atomic():
                    yield self.db
                return
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self.db
            except BaseException:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def query(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> list[dict[str, Any]]:
        """Rows of a statement, as dicts. Meant for reads; a write outside ``transaction()`` is
        committed at once, so it can never leave an implicit transaction open behind it."""
        with self._lock:
            self._check_open()
            was_in_transaction = self._conn.in_transaction
            try:
                cursor = self._conn.execute(sql, params)
                names = [d[0] for d in cursor.description or ()]
                rows = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
            except BaseException:
                if not was_in_transaction and self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise
            if not was_in_transaction and self._conn.in_transaction:
                self._conn.execute("COMMIT")
            return rows

    def schema_versions(self) -> dict[int, str]:
        return {r["version"]: r["name"] for r in self.query("SELECT version, name FROM schema_version")}

    def _check_open(self) -> None:
        if self._closed:
            raise HistoryError(f"history database {self.path} is closed")

    def _migrate(self, migrations: list[Migration]) -> None:
        known = {m.version: m for m in migrations}
        if len(known) != len(migrations):
            raise HistoryError("two migrations share a version number")
        with self.transaction() as db:
            db.table("schema_version").create(
                {"version": int, "name": str, "applied_at": str}, pk="version", if_not_exists=True
            )
        applied = self.schema_versions()
        unknown = sorted(v for v in applied if v not in known)
        if unknown:
            newest = unknown[-1]
            raise SchemaTooNew(
                f"history database {self.path} has schema version {newest} ({applied[newest]}), newer than "
                f"this kernelevolve knows (up to {max(known, default=0)}): upgrade kernelevolve or use another --db"
            )
        for version in sorted(set(known) - set(applied)):
            migration = known[version]
            with self.transaction() as db:
                # Another process may have applied it while we waited for the write lock.
                if self.query("SELECT 1 FROM schema_version WHERE version = ?", [version]):
                    continue
                migration.apply(db)
                db.table("schema_version").insert(
                    {"version": version, "name": migration.name, "applied_at": now_iso()}
                )

    # -- runs ---------------------------------------------------------------------------------------

    def create_run(
        self,
        *,
        kind: str,
        problem_path: str,
        problem_hash: str,
        signature: str | None,
        strategy: str | None,
        config: dict[str, Any],
        device: str,
        timing_kind: str | None,
    ) -> int:
        if kind not in RUN_KINDS:
            raise ValueError(f"run kind must be one of {RUN_KINDS}, got {kind!r}")
        row = {
            "kind": kind,
            "problem_path": normalise_path(problem_path),
            "problem_hash": problem_hash,
            "signature": signature,
            "strategy": strategy,
            "config": _dumps(config),
            "device": device,
            "timing_kind": timing_kind,
            "status": "running",
            "reason": "",
            "created_at": now_iso(),
        }
        with self.transaction() as db:
            return _last_pk(db.table("runs").insert(row))

    def finish_run(
        self,
        run_id: int,
        *,
        status: str,
        reason: str,
        best_candidate_id: int | None,
        device: str | None = None,
        timing_kind: str | None = None,
    ) -> None:
        """Close a run. ``device``/``timing_kind``, when given, replace what was known at the start."""
        if status not in RUN_STATUSES or status == "running":
            raise ValueError(f"a finished run's status is finished, cancelled or failed, got {status!r}")
        updates: dict[str, Any] = {
            "status": status,
            "reason": reason,
            "best_candidate_id": best_candidate_id,
            "finished_at": now_iso(),
        }
        if device is not None:
            updates["device"] = device
        if timing_kind is not None:
            updates["timing_kind"] = timing_kind
        with self.transaction():
            self._require_run(run_id)
            if best_candidate_id is not None:
                self._require_candidate(best_candidate_id)
            self._update("runs", run_id, updates)

    def get_run(self, run_id: int) -> RunRecord | None:
        rows = self.query("SELECT * FROM runs WHERE id = ?", [run_id])
        return _run_record(rows[0]) if rows else None

    def list_runs(self, limit: int = 20, problem_path: str | None = None) -> list[RunRecord]:
        """Newest first."""
        if problem_path is None:
            rows = self.query("SELECT * FROM runs ORDER BY id DESC LIMIT ?", [limit])
        else:
            rows = self.query(
                "SELECT * FROM runs WHERE problem_path = ? ORDER BY id DESC LIMIT ?",
                [normalise_path(problem_path), limit],
            )
        return [_run_record(r) for r in rows]

    # -- candidates ---------------------------------------------------------------------------------

    def add_candidate(
        self,
        *,
        run_id: int,
        parent_id: int | None,
        operator: str,
        source: str,
        note: str = "",
        step: int = 0,
    ) -> int:
        """Store a proposal (status 'pending') with its unified diff against the parent."""
        with self.transaction() as db:
            self._require_run(run_id)
            parent_source = ""
            parent_label = "empty"
            if parent_id is not None:
                parent = self.query("SELECT source FROM candidates WHERE id = ?", [parent_id])
                if not parent:
                    raise HistoryError(f"parent candidate {parent_id} does not exist")
                parent_source = parent[0]["source"]
                parent_label = f"candidate {parent_id}"
            row = {
                "run_id": run_id,
                "parent_id": parent_id,
                "operator": operator,
                "note": note,
                "step": step,
                "source": source,
                "source_hash": compute_source_hash(source),
                "diff": "",
                "status": "pending",
                "stale": 0,
                "created_at": now_iso(),
            }
            candidate_id = _last_pk(db.table("candidates").insert(row))
            diff = unified_diff(parent_source, source, parent_label, f"candidate {candidate_id}")
            self._update("candidates", candidate_id, {"diff": diff})
            return candidate_id

    def record_evaluation(self, candidate_id: int, result: EvalResult, fitness: float) -> None:
        if math.isnan(fitness):
            raise ValueError("fitness must be a number, got NaN")
        data = result.to_dict()
        fingerprint = result.fingerprint
        updates = {
            "status": "evaluated",
            "verdict": result.verdict.value,
            "stage": result.stage.value,
            "reason": result.reason,
            "input_sets": _dumps(data["input_sets"]),
            "timings": _dumps(data["timings"]),
            "result": _dumps(data),
            "speedup": result.speedup,
            "speedup_vs_eager": result.speedup_vs_eager,
            "speedup_vs_compile": result.speedup_vs_compile,
            "roofline_fraction": result.roofline_fraction,
            "fitness": fitness,
            "timing_kind": result.timing_kind.value if result.timing_kind else None,
            "device": fingerprint.device if fingerprint else None,
            "fingerprint": _dumps(data["fingerprint"]) if fingerprint else None,
            "evaluated_at": now_iso(),
        }
        with self.transaction():
            rows = self.query("SELECT status FROM candidates WHERE id = ?", [candidate_id])
            if not rows:
                raise HistoryError(f"candidate {candidate_id} does not exist")
            if rows[0]["status"] == "evaluated":
                raise HistoryError(f"candidate {candidate_id} is already evaluated")
            self._update("candidates", candidate_id, updates)

    def get_candidate(self, candidate_id: int) -> CandidateRecord | None:
        rows = self.query("SELECT * FROM candidates WHERE id = ?", [candidate_id])
        return _candidate_record(rows[0]) if rows else None

    def list_candidates(self, run_id: int, status: str | None = None) -> list[CandidateRecord]:
        """In creation order."""
        if status is not None and status not in CANDIDATE_STATUSES:
            raise ValueError(f"candidate status must be one of {CANDIDATE_STATUSES}, got {status!r}")
        sql = "SELECT * FROM candidates WHERE run_id = ?"
        params: list[Any] = [run_id]
        if status is not None:
            sql += " AND status = ?"
            params.append(status)
        return [_candidate_record(r) for r in self.query(sql + " ORDER BY id", params)]

    def count_candidates(self, run_id: int) -> dict[str, int]:
        """{'total', 'evaluated', 'correct'} for one run."""
        rows = self.query(
            "SELECT count(*) AS total, coalesce(sum(status = 'evaluated'), 0) AS evaluated, "
            "coalesce(sum(verdict = 'correct'), 0) AS correct FROM candidates WHERE run_id = ?",
            [run_id],
        )
        return {k: int(v) for k, v in rows[0].items()}

    def find_candidate_by_hash(self, run_id: int, source_hash: str) -> CandidateRecord | None:
        rows = self.query(
            "SELECT * FROM candidates WHERE run_id = ? AND source_hash = ? ORDER BY id LIMIT 1",
            [run_id, source_hash],
        )
        return _candidate_record(rows[0]) if rows else None

    def best_candidate(self, run_id: int) -> CandidateRecord | None:
        """The run's correct candidate with the highest fitness (the earliest on a tie)."""
        rows = self.query(
            "SELECT * FROM candidates WHERE run_id = ? AND status = 'evaluated' AND verdict = 'correct' "
            "ORDER BY fitness DESC, id ASC LIMIT 1",
            [run_id],
        )
        return _candidate_record(rows[0]) if rows else None

    def best_for_signature(
        self, signature: str, timing_kind: str | None = None, *, include_stale: bool = False
    ) -> CandidateRecord | None:
        """Best correct candidate over every run with this op signature: the warm-start seed."""
        sql = (
            "SELECT c.* FROM candidates c JOIN runs r ON c.run_id = r.id "
            "WHERE r.signature = ? AND c.status = 'evaluated' AND c.verdict = 'correct'"
        )
        params: list[Any] = [signature]
        if timing_kind is not None:
            sql += " AND c.timing_kind = ?"
            params.append(timing_kind)
        if not include_stale:
            sql += " AND c.stale = 0"
        rows = self.query(sql + " ORDER BY c.fitness DESC, c.id ASC LIMIT 1", params)
        return _candidate_record(rows[0]) if rows else None

    def best_for_problem(self, problem_path: str, *, include_stale: bool = True) -> list[CandidateRecord]:
        """For hover: the best correct candidate per (device, timing kind[, stale]) for this file.

        Measured before modelled, then by fitness. With ``include_stale`` a stale best (the problem
        changed since it was measured) is listed beside the fresh one, never in its place.
        """
        stale_filter = "" if include_stale else " AND c.stale = 0"
        rows = self.query(
            "SELECT * FROM (SELECT c.*, row_number() OVER ("
            "  PARTITION BY c.device, c.timing_kind, c.stale ORDER BY c.fitness DESC, c.id ASC) AS rank_"
            " FROM candidates c JOIN runs r ON c.run_id = r.id"
            " WHERE r.problem_path = ? AND c.status = 'evaluated' AND c.verdict = 'correct'"
            f"{stale_filter}) WHERE rank_ = 1"
            " ORDER BY stale ASC, timing_kind = 'measured' DESC, fitness DESC, id ASC",
            [normalise_path(problem_path)],
        )
        return [_candidate_record(r) for r in rows]

    def mark_stale(self, candidate_id: int, reason: str) -> None:
        with self.transaction():
            self._require_candidate(candidate_id)
            self._update("candidates", candidate_id, {"stale": 1, "stale_reason": reason})

    def mark_stale_for_problem(self, problem_path: str, current_hash: str, reason: str) -> int:
        """Mark stale every fresh candidate of runs made on another version of this problem file."""
        with self.transaction():
            cursor = self._conn.execute(
                "UPDATE candidates SET stale = 1, stale_reason = ? WHERE stale = 0 AND run_id IN "
                "(SELECT id FROM runs WHERE problem_path = ? AND problem_hash != ?)",
                [reason, normalise_path(problem_path), current_hash],
            )
            return cursor.rowcount

    # -- events -------------------------------------------------------------------------------------

    def add_event(self, run_id: int | None, kind: str, payload: dict[str, Any]) -> None:
        with self.transaction() as db:
            if run_id is not None:
                self._require_run(run_id)
            db.table("events").insert(
                {"run_id": run_id, "kind": kind, "payload": _dumps(payload), "created_at": now_iso()}
            )

    def list_events(self, run_id: int) -> list[dict[str, Any]]:
        """[{'id', 'run_id', 'kind', 'payload': dict, 'created_at'}] in order."""
        rows = self.query("SELECT * FROM events WHERE run_id = ? ORDER BY id", [run_id])
        for row in rows:
            row["payload"] = json.loads(row["payload"])
        return rows

    # -- helpers ------------------------------------------------------------------------------------

    def _update(self, table: str, row_id: int, updates: dict[str, Any]) -> None:
        columns = ", ".join(f'"{name}" = ?' for name in updates)
        self._conn.execute(f'UPDATE "{table}" SET {columns} WHERE id = ?', [*updates.values(), row_id])

    def _require_run(self, run_id: int) -> None:
        if not self.query("SELECT 1 FROM runs WHERE id = ?", [run_id]):
            raise HistoryError(f"run {run_id} does not exist")

    def _require_candidate(self, candidate_id: int) -> None:
        if not self.query("SELECT 1 FROM candidates WHERE id = ?", [candidate_id]):
            raise HistoryError(f"candidate {candidate_id} does not exist")


def _last_pk(table: sqlite_utils.db.Table) -> int:
    assert table.last_pk is not None
    return int(table.last_pk)


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _loads(text: str | None) -> Any:
    return json.loads(text) if text else None


def _run_record(row: dict[str, Any]) -> RunRecord:
    return RunRecord(
        id=row["id"],
        kind=row["kind"],
        problem_path=row["problem_path"],
        problem_hash=row["problem_hash"],
        signature=row["signature"],
        strategy=row["strategy"],
        config=_loads(row["config"]) or {},
        device=row["device"],
        timing_kind=row["timing_kind"],
        status=row["status"],
        reason=row["reason"] or "",
        best_candidate_id=row["best_candidate_id"],
        created_at=row["created_at"],
        finished_at=row["finished_at"],
    )


def _candidate_record(row: dict[str, Any]) -> CandidateRecord:
    result_data = _loads(row["result"])
    return CandidateRecord(
        id=row["id"],
        run_id=row["run_id"],
        parent_id=row["parent_id"],
        operator=row["operator"],
        note=row["note"] or "",
        step=row["step"] or 0,
        source=row["source"],
        source_hash=row["source_hash"],
        diff=row["diff"] or "",
        status=row["status"],
        verdict=row["verdict"],
        stage=row["stage"],
        reason=row["reason"],
        result=EvalResult.from_dict(result_data) if result_data else None,
        speedup=row["speedup"],
        speedup_vs_eager=row["speedup_vs_eager"],
        speedup_vs_compile=row["speedup_vs_compile"],
        roofline_fraction=row["roofline_fraction"],
        fitness=row["fitness"],
        timing_kind=row["timing_kind"],
        device=row["device"],
        stale=bool(row["stale"]),
        stale_reason=row["stale_reason"],
        created_at=row["created_at"],
        evaluated_at=row["evaluated_at"],
    )
