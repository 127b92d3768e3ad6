"""History version 2: what the language server and `kernelevolve trace` keep.

- ``traces``: one row per recorded call of a function or module ``forward`` defined in the user's
  files, written by ``kernelevolve trace SCRIPT``: positional arguments as records of shape,
  dtype and value statistics (see search/trace.py). The editor derives an op's inputs from them.
- ``kernel_files``: kernel files the server knows (written by a run or applied from the editor),
  with their problem and the candidate they came from, so a change on disk can be re-verified
  and the history rows it contradicts marked stale.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import sqlite_utils
from kernelevolve.search.migrations import Migration, register

if TYPE_CHECKING:  # history.py imports migrations.py, which imports this module
    from kernelevolve.search.history import History


def normalise_path(path: str | Path) -> str:
    """Same rule as history.normalise_path (absolute, resolved) without importing it."""
    return str(Path(path).expanduser().resolve())


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def _v2_traces_and_kernel_files(db: sqlite_utils.Database) -> None:
    db.table("traces").create(
        {
            "id": int,
            "trace_id": str,  # one `kernelevolve trace` invocation
            "script": str,
            "file": str,  # resolved path of the file defining the function
            "qualname": str,  # "RowScale.forward", "gelu_residual", "RowScale.__init__"
            "call_index": int,  # 0 for the first distinct call signature of that qualname
            "args": str,  # json list of argument records
            "created_at": str,
        },
        pk="id",
        not_null={"trace_id", "script", "file", "qualname", "args", "created_at"},
    )
    db.table("traces").create_index(["file", "qualname"])
    db.table("kernel_files").create(
        {
            "path": str,
            "problem_path": str,
            "candidate_id": int,
            "source_hash": str,  # of the file's text when last written or verified
            "verdict": str,
            "speedup": float,
            "timing_kind": str,
            "device": str,
            "reason": str,
            "verified_at": str,
        },
        pk="path",
        not_null={"problem_path"},
    )


MIGRATION = register(Migration(2, "lsp traces and kernel files", _v2_traces_and_kernel_files))


@dataclass(frozen=True)
class TraceRecord:
    trace_id: str
    script: str
    file: str
    qualname: str
    call_index: int
    args: list[dict[str, Any]]
    created_at: str


@dataclass(frozen=True)
class KernelFile:
    path: str
    problem_path: str
    candidate_id: int | None
    source_hash: str | None
    verdict: str | None
    speedup: float | None
    timing_kind: str | None
    device: str | None
    reason: str | None
    verified_at: str | None


def record_trace(history: History, *, trace_id: str, script: str, calls: list[dict[str, Any]]) -> int:
    """Store one trace run's calls ({file, qualname, call_index, args}); returns rows written."""
    rows = [
        {
            "trace_id": trace_id,
            "script": normalise_path(script),
            "file": normalise_path(call["file"]),
            "qualname": call["qualname"],
            "call_index": int(call.get("call_index", 0)),
            "args": json.dumps(call["args"]),
            "created_at": now_iso(),
        }
        for call in calls
    ]
    with history.transaction() as db:
        db.table("traces").insert_all(rows)
    return len(rows)


def latest_trace(history: History, file: str, qualname: str) -> TraceRecord | None:
    """The newest recorded first call of ``qualname`` defined in ``file``."""
    rows = history.query(
        "SELECT * FROM traces WHERE file = ? AND qualname = ? ORDER BY id DESC, call_index ASC LIMIT 1",
        [normalise_path(file), qualname],
    )
    return _trace(rows[0]) if rows else None


def traces_for_file(history: History, file: str) -> list[TraceRecord]:
    rows = history.query(
        "SELECT * FROM traces WHERE file = ? ORDER BY id DESC",
        [normalise_path(file)],
    )
    return [_trace(r) for r in rows]


def upsert_kernel_file(
    history: History,
    path: str,
    *,
    problem_path: str,
    candidate_id: int | None = None,
    source_hash: str | None = None,
    verdict: str | None = None,
    speedup: float | None = None,
    timing_kind: str | None = None,
    device: str | None = None,
    reason: str | None = None,
) -> None:
    row = {
        "path": normalise_path(path),
        "problem_path": normalise_path(problem_path),
        "candidate_id": candidate_id,
        "source_hash": source_hash,
        "verdict": verdict,
        "speedup": speedup,
        "timing_kind": timing_kind,
        "device": device,
        "reason": reason,
        "verified_at": now_iso() if verdict else None,
    }
    with history.transaction() as db:
        db.table("kernel_files").upsert(row, pk="path")


def get_kernel_file(history: History, path: str) -> KernelFile | None:
    rows = history.query("SELECT * FROM kernel_files WHERE path = ?", [normalise_path(path)])
    return KernelFile(**rows[0]) if rows else None


def list_kernel_files(history: History) -> list[KernelFile]:
    return [KernelFile(**r) for r in history.query("SELECT * FROM kernel_files ORDER BY path")]


def _trace(row: dict[str, Any]) -> TraceRecord:
    return TraceRecord(
        trace_id=row["trace_id"],
        script=row["script"],
        file=row["file"],
        qualname=row["qualname"],
        call_index=row["call_index"],
        args=json.loads(row["args"]),
        created_at=row["created_at"],
    )
