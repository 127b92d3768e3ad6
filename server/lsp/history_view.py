"""What history knows about an op, shaped for hints, hover and the history command."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kernelevolve.search.history import CandidateRecord, History
from kernelevolve.server.lsp.protocol import BestSoFar, short_device
from kernelevolve.server.lsp.server import DocTarget, EvolveServer

logger = logging.getLogger(__name__)


def _ledger_hook() -> Callable[[History, int], str] | None:
    """H8's LLM ledger line (`history_llm.ledger_summary`), when that module is installed."""
    try:
        from kernelevolve.search.history_llm import ledger_summary
    except ImportError:
        return None
    return ledger_summary


def best_from_record(record: CandidateRecord, hardware: str) -> BestSoFar | None:
    if record.speedup is None or record.timing_kind is None:
        return None
    device = short_device(record.device, record.timing_kind, _modelled_hardware(record) or hardware)
    return BestSoFar(record.id, record.speedup, record.timing_kind, device, record.run_id, record.stale)


def _modelled_hardware(record: CandidateRecord) -> str | None:
    fingerprint = record.fingerprint
    return fingerprint.hardware_model if fingerprint is not None else None


def records_for(ls: EvolveServer, item: DocTarget) -> list[CandidateRecord]:
    """Blocking (io_pool): best correct candidates per device/timing for the op's problem files."""
    if not ls.db_path.exists():  # reading never creates .kernelevolve/ in a workspace
        return []
    history = ls.history()
    records: list[CandidateRecord] = []
    for path in item.problem_paths:
        records.extend(history.best_for_problem(str(path)))
    return sorted(records, key=lambda r: (r.stale, r.timing_kind != "measured", -(r.fitness or 0.0)))


async def load_best(ls: EvolveServer, uri: str) -> None:
    """Fill ``ls.best`` for the document's ops from history; refresh hints when it changed."""
    items = ls.targets(uri)
    if not items or not ls.db_path.exists():
        return
    hardware = ls.settings.hardware

    def load() -> dict[str, BestSoFar]:
        found: dict[str, BestSoFar] = {}
        for item in items:
            for path in item.problem_paths:
                for record in ls.history().best_for_problem(str(path)):
                    best = best_from_record(record, hardware)
                    if best is not None and str(path) not in found:
                        found[str(path)] = best
        return found

    try:
        found = await ls.in_io(load)
    except Exception as exc:
        logger.warning("reading history for %s failed: %s", uri, exc)
        return
    changed = False
    for key, best in found.items():
        live = ls.jobs.running_for(Path(key)) if ls.jobs is not None else None
        if live is None and ls.best.get(key) != best:
            ls.best[key] = best
            changed = True
    if changed:
        ls.refresh_hints()


def ledger_line(ls: EvolveServer, records: list[CandidateRecord]) -> str:
    """Blocking (io_pool): H8's LLM cost line for the best record's run, '' when none."""
    ledger = _ledger_hook()
    if ledger is None or not records:
        return ""
    try:
        return ledger(ls.history(), records[0].run_id)
    except Exception as exc:  # the ledger is informative; never break hover
        logger.info("ledger summary failed: %s", exc)
        return ""


async def cached_history(ls: EvolveServer, item: DocTarget) -> tuple[list[CandidateRecord], str]:
    """Records and ledger line for an op, read from SQLite only when history changed since."""
    key = tuple(str(p) for p in item.problem_paths)
    cached = ls.history_cache.get(key)
    if cached is not None and cached[0] == ls.history_generation:
        return cached[1], cached[2]
    generation = ls.history_generation

    def load() -> tuple[list[CandidateRecord], str]:
        records = records_for(ls, item)
        return records, ledger_line(ls, records)

    records, ledger = await ls.in_io(load)
    ls.history_cache[key] = (generation, records, ledger)
    return records, ledger


def hover_markdown(
    ls: EvolveServer, item: DocTarget, records: list[CandidateRecord], job: Any, ledger: str
) -> str:
    lines = [f"**kernelevolve** · `{item.target.qualname}`", ""]
    if job is not None:
        best = f"best {job.best.label()}" if job.best else "no correct candidate yet"
        run = f"run {job.run_id}, " if job.run_id is not None else ""
        lines += [f"Searching: {run}{job.evaluated}/{job.config.max_steps} evaluated, {best}", ""]
    if not records:
        lines.append("No kernel in history yet: choose **Evolve kernel**.")
        return "\n".join(lines)
    hardware = ls.settings.hardware
    lines += ["| candidate | run | speedup | timing | device | date |", "|---|---|---|---|---|---|"]
    for record in records[:6]:
        known = best_from_record(record, hardware)
        device = known.device if known else (record.device or "?")
        stale = " (stale)" if record.stale else ""
        date = (record.evaluated_at or record.created_at)[:10]
        speed = f"{record.speedup:.2f}×" if record.speedup is not None else "-"
        lines.append(
            f"| #{record.id}{stale} | {record.run_id} | {speed} | {record.timing_kind} | {device} | {date} |"
        )
    top = records[0]
    shapes = [
        f"`{t.input_set}` {'×'.join(str(d) for d in t.shapes[0]) if t.shapes else ''}: {t.speedup:.2f}×"
        for t in top.timings
    ]
    if shapes:
        lines += ["", f"Per shape (#{top.id}): " + " · ".join(shapes)]
    if top.stale and top.stale_reason:
        lines += ["", f"Stale: {top.stale_reason}"]
    if ledger:
        lines += ["", ledger]
    return "\n".join(lines)


def history_entries(records: list[CandidateRecord], hardware: str) -> list[dict[str, Any]]:
    entries = []
    for record in records:
        best = best_from_record(record, hardware)
        entries.append(
            {
                "candidateId": record.id,
                "runId": record.run_id,
                "speedup": record.speedup,
                "timing": record.timing_kind,
                "device": best.device if best else record.device,
                "date": record.evaluated_at or record.created_at,
                "stale": record.stale,
                "staleReason": record.stale_reason,
                "perShape": [
                    {"inputSet": t.input_set, "shapes": t.shapes, "speedup": t.speedup}
                    for t in record.timings
                ],
            }
        )
    return entries
