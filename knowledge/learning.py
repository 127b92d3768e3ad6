"""Distil verified, measured wins into knowledge entries that later searches retrieve.

A win is a candidate that passed every check with MEASURED timing (a real GPU) and beat the best
baseline (speedup > 1). Modelled (CPU) results never become knowledge: they are estimates. The
entry records the diagnosis that motivated the change, what changed (note and diff against the
parent), per-shape speedups, and device and versions, with provenance (run, candidate,
fingerprint, date). Entries are listed and removed with `kernelevolve kb list|remove`.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from kernelevolve.knowledge.kb import Document
from kernelevolve.search.llm.diagnosis import platform_of_device

if TYPE_CHECKING:
    from kernelevolve.search.history import CandidateRecord, History

MAX_DIFF_CHARS = 4000


def is_win(candidate: CandidateRecord) -> bool:
    result = candidate.result
    return (
        result is not None
        and result.correct
        and result.timing_kind is not None
        and result.timing_kind.value == "measured"
        and (result.speedup or 0.0) > 1.0
    )


def distil(history: History, candidate_id: int) -> int | None:
    """Store an entry for ``candidate_id`` if it is a win without one yet; returns the entry id."""
    from kernelevolve.search import history_llm

    candidate = history.get_candidate(candidate_id)
    if candidate is None or not is_win(candidate):
        return None
    existing = history_llm.entry_for_candidate(history, candidate_id)
    if existing is not None:
        return existing.id
    result = candidate.result
    assert result is not None and result.speedup is not None
    run = history.get_run(candidate.run_id)
    fp = result.fingerprint
    device = fp.device if fp else "unknown device"
    platform = platform_of_device(device)
    bounds = sorted({t.roofline.bound for t in result.timings if t.roofline is not None})
    episodes = [
        e
        for e in history_llm.list_episodes(history, candidate.run_id)
        if e["candidate_hash"] == candidate.source_hash
    ]
    diagnosis = json.loads(episodes[-1]["diagnosis"]) if episodes else {}
    lines = [
        f"# {candidate.note or 'Faster kernel'}",
        "",
        f"Problem signature: `{run.signature if run else '?'}`",
        f"Speedup {result.speedup:.2f}x against the best baseline, measured on {device}"
        f" (operator {candidate.operator}, run {candidate.run_id}, candidate {candidate.id}).",
    ]
    if diagnosis:
        lines += [
            "",
            f"Diagnosis that motivated it: {diagnosis.get('kind', '?')} bound — {diagnosis.get('summary', '')}",
        ]
    lines += ["", "Per input set:"]
    for t in result.timings:
        frac = f", {t.roofline_fraction:.0%} of roofline" if t.roofline_fraction is not None else ""
        lines.append(f"- {t.input_set} {t.shapes}: {t.candidate.median_ms:.4g} ms, {t.speedup:.2f}x{frac}")
    if fp is not None:
        lines += ["", f"Versions: torch {fp.torch}, triton {fp.triton}, CUDA {fp.cuda}, driver {fp.driver}."]
    if candidate.diff:
        diff = (
            candidate.diff
            if len(candidate.diff) <= MAX_DIFF_CHARS
            else candidate.diff[:MAX_DIFF_CHARS] + "\n..."
        )
        lines += ["", "What changed (diff against the parent):", "```diff", diff.rstrip(), "```"]
    title = f"{candidate.note or 'win'} ({result.speedup:.2f}x measured, {device})"[:200]
    return history_llm.add_entry(
        history,
        title=title,
        body="\n".join(lines),
        platforms=[platform] if platform else ["any"],
        kinds=bounds or ["any"],
        tags=["learned", candidate.operator],
        signature=run.signature if run else None,
        run_id=candidate.run_id,
        candidate_id=candidate.id,
        speedup=result.speedup,
        timing_kind="measured",
        fingerprint=result.to_dict().get("fingerprint"),
    )


def learn_from_run(history: History, run_id: int) -> list[int]:
    """Distil the run's best candidate if it is a win; returns the entry ids written or found."""
    best = history.best_candidate(run_id)
    if best is None:
        return []
    entry = distil(history, best.id)
    return [entry] if entry is not None else []


def learned_documents(history: History) -> list[Document]:
    from kernelevolve.search import history_llm

    return [
        Document(
            id=f"learned/{e.id}",
            title=e.title,
            source="learned",
            path=f"history:knowledge_entries/{e.id}",
            body=e.body,
            summary=e.title,
            platforms=e.platforms,
            kinds=e.kinds,
            phases=("optimise",),
            tags=e.tags,
        )
        for e in history_llm.list_entries(history)
    ]
