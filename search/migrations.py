"""Numbered schema migrations of the history database.

Each feature keeps its migration in its own module and registers it here:

    # search/history_lsp.py
    from kernelevolve.search.migrations import Migration, register
    register(Migration(2, "lsp traces and stale marks", _apply))

Version 1 (runs, candidates, events) lives in this file. Versions 2 (the language server's
tables, ``search/history_lsp.py``) and 3 (the LLM ledger and knowledge entries,
``search/history_llm.py``) are imported from ``FEATURE_MODULES`` at the bottom of this file, so
that opening a History always knows every migration of the installed code.

``kernelevolve.search.history`` applies the pending ones in ascending version order, each in its
own ``BEGIN IMMEDIATE`` transaction together with its ``schema_version`` row: a migration either
lands whole or not at all. A migration must only create or extend its own tables; it runs inside
an open transaction, so it must not change ``journal_mode`` or run ``VACUUM``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass

import sqlite_utils


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    apply: Callable[[sqlite_utils.Database], None]


class MigrationConflict(RuntimeError):
    """Two different migrations claim the same version number."""


MIGRATIONS: list[Migration] = []


def register(migration: Migration) -> Migration:
    """Add a migration to ``MIGRATIONS``; registering the same version and name again is a no-op."""
    if migration.version < 1:
        raise ValueError(f"migration versions start at 1, got {migration.version}")
    for existing in MIGRATIONS:
        if existing.version == migration.version:
            if existing.name == migration.name:
                return existing
            raise MigrationConflict(
                f"schema version {migration.version} claimed by both {existing.name!r} and {migration.name!r}"
            )
    MIGRATIONS.append(migration)
    MIGRATIONS.sort(key=lambda m: m.version)
    return migration


def _v1_runs_candidates_events(db: sqlite_utils.Database) -> None:
    db.table("runs").create(
        {
            "id": int,
            "kind": str,  # 'evolve' | 'eval'
            "problem_path": str,
            "problem_hash": str,
            "signature": str,
            "strategy": str,
            "config": str,  # json
            "device": str,
            "timing_kind": str,  # 'measured' | 'modelled' | NULL before the first evaluation
            "status": str,  # 'running' | 'finished' | 'cancelled' | 'failed'
            "reason": str,
            "best_candidate_id": int,
            "created_at": str,
            "finished_at": str,
        },
        pk="id",
        not_null={"kind", "problem_path", "problem_hash", "config", "device", "status", "created_at"},
        defaults={"status": "running", "reason": "", "config": "{}"},
    )
    db.table("candidates").create(
        {
            "id": int,
            "run_id": int,
            "parent_id": int,
            "operator": str,
            "note": str,
            "step": int,
            "source": str,
            "source_hash": str,
            "diff": str,
            "status": str,  # 'pending' | 'evaluated'
            "verdict": str,
            "stage": str,
            "reason": str,
            "input_sets": str,  # json
            "timings": str,  # json
            "result": str,  # json: EvalResult.to_dict()
            "speedup": float,
            "speedup_vs_eager": float,
            "speedup_vs_compile": float,
            "roofline_fraction": float,
            "fitness": float,
            "timing_kind": str,
            "device": str,
            "fingerprint": str,  # json
            "stale": int,
            "stale_reason": str,
            "created_at": str,
            "evaluated_at": str,
        },
        pk="id",
        foreign_keys=[("run_id", "runs", "id"), ("parent_id", "candidates", "id")],
        not_null={"run_id", "operator", "source", "source_hash", "status", "stale", "created_at"},
        defaults={"status": "pending", "stale": 0, "note": "", "step": 0, "diff": ""},
    )
    db.table("events").create(
        {"id": int, "run_id": int, "kind": str, "payload": str, "created_at": str},
        pk="id",
        foreign_keys=[("run_id", "runs", "id")],
        not_null={"kind", "payload", "created_at"},
    )
    db.table("candidates").create_index(["run_id"])
    db.table("candidates").create_index(["source_hash"])
    db.table("runs").create_index(["signature"])
    db.table("runs").create_index(["problem_path"])
    db.table("events").create_index(["run_id"])


register(Migration(1, "runs, candidates, events", _v1_runs_candidates_events))

# Feature modules that register later versions, in version order. A module that is not installed
# yet (its work item has not landed) is skipped; a module that fails to import for any other
# reason is an error, never silently ignored.
FEATURE_MODULES = ("kernelevolve.search.history_lsp", "kernelevolve.search.history_llm")

for _module in FEATURE_MODULES:
    try:
        importlib.import_module(_module)
    except ModuleNotFoundError as _exc:
        if _exc.name != _module:
            raise
