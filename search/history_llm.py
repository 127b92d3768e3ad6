"""History schema version 3: the LLM call ledger and learned knowledge entries.

``llm_calls``: one row per API attempt (retries and cancelled calls included) with tokens, cost,
latency and status, so a run's spend is a SUM and the budget survives a resume.
``knowledge_entries``: wins distilled into documents the knowledge base retrieves, with their
provenance (run, candidate, fingerprint, date). Nothing here ever stores an API key: rows carry
only what ``LlmCall`` holds, and its error text is redacted by the client.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import sqlite_utils
from kernelevolve.search.migrations import Migration, register

if TYPE_CHECKING:  # history imports migrations, which imports this module: no runtime cycle
    from kernelevolve.search.history import History
    from kernelevolve.search.llm.client import LlmCall


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def _v3_llm_ledger_and_knowledge(db: sqlite_utils.Database) -> None:
    db.table("llm_calls").create(
        {
            "id": int,
            "run_id": int,
            "parent_candidate_id": int,  # the node being expanded (None in the draft phase)
            "candidate_hash": str,  # source hash of the proposal this call led to, when one did
            "model": str,
            "purpose": str,
            "status": str,  # 'ok' | 'retried' | 'error' | 'cancelled'
            "attempt": int,
            "input_tokens": int,
            "output_tokens": int,
            "cache_creation_input_tokens": int,
            "cache_read_input_tokens": int,
            "cost_usd": float,
            "price_known": int,
            "latency_s": float,
            "error": str,
            "request_id": str,
            "created_at": str,
        },
        pk="id",
        foreign_keys=[("run_id", "runs", "id")],
        not_null={"run_id", "model", "purpose", "status", "created_at"},
        defaults={"input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0, "attempt": 1},
    )
    db.table("llm_calls").create_index(["run_id"])
    db.table("llm_episodes").create(
        {
            "id": int,
            "run_id": int,
            "parent_candidate_id": int,
            "outcome": str,  # 'proposed' | 'duplicate' | 'no_code' | 'invalid' | 'max_turns' | 'api_error' | ...
            "detail": str,  # the failure reason (lint report, API error), redacted
            "note": str,
            "diagnosis": str,  # json: the Diagnosis that parameterised the episode
            "retrieved": str,  # json: ids of the knowledge documents put into the prompt
            "candidate_hash": str,
            "turns": int,
            "tool_calls": int,
            "created_at": str,
        },
        pk="id",
        foreign_keys=[("run_id", "runs", "id")],
        not_null={"run_id", "outcome", "created_at"},
    )
    db.table("llm_episodes").create_index(["run_id"])
    db.table("knowledge_entries").create(
        {
            "id": int,
            "title": str,
            "body": str,  # markdown: diagnosis, what changed, the diff, device and versions
            "platforms": str,  # json list
            "kinds": str,  # json list
            "tags": str,  # json list
            "signature": str,  # problem signature of the win
            "run_id": int,
            "candidate_id": int,
            "speedup": float,
            "timing_kind": str,
            "fingerprint": str,  # json
            "created_at": str,
        },
        pk="id",
        not_null={"title", "body", "created_at"},
    )
    db.table("knowledge_entries").create_index(["candidate_id"])


MIGRATION = register(Migration(3, "llm ledger and knowledge entries", _v3_llm_ledger_and_knowledge))


# -- the ledger -------------------------------------------------------------------------------------


class HistoryLedger:
    """The ``Ledger`` of one run, persisted in history (one committed row per attempt)."""

    def __init__(self, history: History, run_id: int) -> None:
        self.history = history
        self.run_id = run_id

    def record(self, call: LlmCall) -> None:
        record_call(self.history, call)

    def spent_usd(self) -> float:
        return run_spend(self.history, self.run_id).cost_usd


def record_call(history: History, call: LlmCall) -> int:
    row = {k: v for k, v in call.__dict__.items()}
    row["price_known"] = int(call.price_known)
    row["created_at"] = now_iso()
    with history.transaction() as db:
        table = db.table("llm_calls")
        table.insert(row)
        return _pk(table.last_pk)


def last_call_id(history: History, run_id: int) -> int:
    """The newest ledger row of the run (0 when none): mark it before an episode."""
    rows = history.query("SELECT COALESCE(MAX(id), 0) AS m FROM llm_calls WHERE run_id = ?", [run_id])
    return int(rows[0]["m"])


def set_candidate_hash(history: History, run_id: int, after_call_id: int, source_hash: str) -> None:
    """Tie the calls of one episode (rows after ``after_call_id``) to the proposal they produced."""
    with history.transaction() as db:
        db.execute(
            "UPDATE llm_calls SET candidate_hash = ? WHERE run_id = ? AND id > ? AND candidate_hash IS NULL",
            [source_hash, run_id, after_call_id],
        )


def record_episode(
    history: History,
    *,
    run_id: int,
    parent_candidate_id: int | None,
    outcome: str,
    detail: str = "",
    note: str = "",
    diagnosis: dict[str, Any] | None = None,
    retrieved: list[str] | None = None,
    candidate_hash: str | None = None,
    turns: int = 0,
    tool_calls: int = 0,
) -> int:
    with history.transaction() as db:
        table = db.table("llm_episodes")
        table.insert(
            {
                "run_id": run_id,
                "parent_candidate_id": parent_candidate_id,
                "outcome": outcome,
                "detail": detail,
                "note": note,
                "diagnosis": json.dumps(diagnosis or {}),
                "retrieved": json.dumps(retrieved or []),
                "candidate_hash": candidate_hash,
                "turns": turns,
                "tool_calls": tool_calls,
                "created_at": now_iso(),
            }
        )
        return _pk(table.last_pk)


def list_episodes(history: History, run_id: int) -> list[dict[str, Any]]:
    return history.query("SELECT * FROM llm_episodes WHERE run_id = ? ORDER BY id", [run_id])


@dataclass(frozen=True)
class Spend:
    calls: int
    input_tokens: int
    output_tokens: int
    cache_creation_input_tokens: int
    cache_read_input_tokens: int
    cost_usd: float
    failed: int
    models: tuple[str, ...]
    price_estimated: bool  # a model without a known price was billed at the fallback rate


def run_spend(history: History, run_id: int) -> Spend:
    row = history.query(
        "SELECT COUNT(*) AS calls, COALESCE(SUM(input_tokens), 0) AS i, COALESCE(SUM(output_tokens), 0) AS o,"
        " COALESCE(SUM(cache_creation_input_tokens), 0) AS cw, COALESCE(SUM(cache_read_input_tokens), 0) AS cr,"
        " COALESCE(SUM(cost_usd), 0.0) AS cost, COALESCE(SUM(status IN ('error', 'retried')), 0) AS failed,"
        " COALESCE(MIN(price_known), 1) AS known, GROUP_CONCAT(DISTINCT model) AS models"
        " FROM llm_calls WHERE run_id = ?",
        [run_id],
    )[0]
    return Spend(
        calls=row["calls"],
        input_tokens=row["i"],
        output_tokens=row["o"],
        cache_creation_input_tokens=row["cw"],
        cache_read_input_tokens=row["cr"],
        cost_usd=float(row["cost"]),
        failed=row["failed"],
        models=tuple(sorted((row["models"] or "").split(","))) if row["models"] else (),
        price_estimated=not row["known"],
    )


def list_calls(history: History, run_id: int) -> list[dict[str, Any]]:
    return history.query("SELECT * FROM llm_calls WHERE run_id = ? ORDER BY id", [run_id])


def ledger_summary(history: History, run_id: int) -> str:
    """One line for hover and `history`: "LLM: 7 calls, 41.2k in / 9.8k out tokens, $0.2310 (claude-…)".

    Empty when the run made no LLM calls.
    """
    s = run_spend(history, run_id)
    if s.calls == 0:
        return ""
    cached = f", {_k(s.cache_read_input_tokens)} cached" if s.cache_read_input_tokens else ""
    failed = f", {s.failed} failed" if s.failed else ""
    est = " (estimated: unknown model price)" if s.price_estimated else ""
    return (
        f"LLM: {s.calls} call{'s' * (s.calls != 1)}{failed}, {_k(s.input_tokens + s.cache_creation_input_tokens)} in"
        f"{cached} / {_k(s.output_tokens)} out tokens, ${s.cost_usd:.4f}{est} ({', '.join(s.models)})"
    )


def _pk(value: Any) -> int:
    assert value is not None, "insert returned no primary key"
    return int(value)


def _k(n: int) -> str:
    return f"{n / 1000:.1f}k" if n >= 1000 else str(n)


# -- learned knowledge entries ------------------------------------------------------------------------


@dataclass(frozen=True)
class KnowledgeEntry:
    id: int
    title: str
    body: str
    platforms: tuple[str, ...]
    kinds: tuple[str, ...]
    tags: tuple[str, ...]
    signature: str | None
    run_id: int | None
    candidate_id: int | None
    speedup: float | None
    timing_kind: str | None
    fingerprint: dict[str, Any] | None
    created_at: str


def add_entry(
    history: History,
    *,
    title: str,
    body: str,
    platforms: list[str],
    kinds: list[str],
    tags: list[str],
    signature: str | None,
    run_id: int | None,
    candidate_id: int | None,
    speedup: float | None,
    timing_kind: str | None,
    fingerprint: dict[str, Any] | None,
) -> int:
    with history.transaction() as db:
        table = db.table("knowledge_entries")
        table.insert(
            {
                "title": title,
                "body": body,
                "platforms": json.dumps(platforms),
                "kinds": json.dumps(kinds),
                "tags": json.dumps(tags),
                "signature": signature,
                "run_id": run_id,
                "candidate_id": candidate_id,
                "speedup": speedup,
                "timing_kind": timing_kind,
                "fingerprint": json.dumps(fingerprint) if fingerprint is not None else None,
                "created_at": now_iso(),
            }
        )
        return _pk(table.last_pk)


def list_entries(history: History) -> list[KnowledgeEntry]:
    return [_entry(r) for r in history.query("SELECT * FROM knowledge_entries ORDER BY id")]


def get_entry(history: History, entry_id: int) -> KnowledgeEntry | None:
    rows = history.query("SELECT * FROM knowledge_entries WHERE id = ?", [entry_id])
    return _entry(rows[0]) if rows else None


def entry_for_candidate(history: History, candidate_id: int) -> KnowledgeEntry | None:
    rows = history.query("SELECT * FROM knowledge_entries WHERE candidate_id = ? LIMIT 1", [candidate_id])
    return _entry(rows[0]) if rows else None


def remove_entry(history: History, entry_id: int) -> None:
    from kernelevolve.search.history import HistoryError

    with history.transaction() as db:
        if not history.query("SELECT 1 FROM knowledge_entries WHERE id = ?", [entry_id]):
            raise HistoryError(f"knowledge entry {entry_id} does not exist")
        db.execute("DELETE FROM knowledge_entries WHERE id = ?", [entry_id])


def _entry(row: dict[str, Any]) -> KnowledgeEntry:
    return KnowledgeEntry(
        id=row["id"],
        title=row["title"],
        body=row["body"],
        platforms=tuple(json.loads(row["platforms"] or "[]")) or ("any",),
        kinds=tuple(json.loads(row["kinds"] or "[]")) or ("any",),
        tags=tuple(json.loads(row["tags"] or "[]")),
        signature=row["signature"],
        run_id=row["run_id"],
        candidate_id=row["candidate_id"],
        speedup=row["speedup"],
        timing_kind=row["timing_kind"],
        fingerprint=json.loads(row["fingerprint"]) if row["fingerprint"] else None,
        created_at=row["created_at"],
    )
