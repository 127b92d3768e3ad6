"""Learning: measured wins become knowledge entries with provenance, retrievable, listable and
removable through the real CLI; modelled results never become knowledge.

The GPU result below is a synthetic fixture (tests/llm/recorded.py) (this machine has no GPU): it stands for a row
the engine would have written, and the test checks what distillation does with it, not the timing.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from kernelevolve.knowledge.kb import KnowledgeBase
from kernelevolve.knowledge.learning import distil, learned_documents
from kernelevolve.search import history_llm
from kernelevolve.search.history import History
from kernelevolve.search.results import TimingKind
from llm.recorded import gpu_result

PARENT = "# parent\nBLOCK = 256\n"
CHILD = "# child\nBLOCK = 1024\n"


def make_run(history: History, kind: TimingKind, candidate_ms: float) -> int:
    run = history.create_run(
        kind="evolve",
        problem_path="examples/rmsnorm/problem.py",
        problem_hash="h",
        signature="aten.rms|f32[4096x4096]|cuda",
        strategy="greedy",
        config={},
        device="NVIDIA H200",
        timing_kind=kind.value,
    )
    parent = history.add_candidate(run_id=run, parent_id=None, operator="template", source=PARENT)
    history.record_evaluation(parent, gpu_result(kind, 0.15), fitness=0.8)
    child = history.add_candidate(
        run_id=run, parent_id=parent, operator="llm", source=CHILD, note="one row per program, BLOCK=1024"
    )
    history.record_evaluation(child, gpu_result(kind, 0.05), fitness=2.4)
    return child


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / ".kernelevolve" / "history.db"


def test_a_measured_win_becomes_a_retrievable_entry_with_provenance(db: Path) -> None:
    with History(db) as history:
        child = make_run(history, TimingKind.MEASURED, 0.05)
        entry_id = distil(history, child)
        assert entry_id is not None
        assert distil(history, child) == entry_id  # idempotent
        entry = history_llm.get_entry(history, entry_id)
        assert entry is not None
        assert entry.candidate_id == child and entry.timing_kind == "measured"
        assert entry.platforms == ("hopper",) and entry.kinds == ("memory",)
        assert entry.fingerprint is not None and entry.fingerprint["device"] == "NVIDIA H200"
        assert "2.40x" in entry.body and "-BLOCK = 256" in entry.body and "+BLOCK = 1024" in entry.body
        assert "triton 3.6.0" in entry.body
        kb = KnowledgeBase(cache_path=db.parent / "kb.sqlite", learned=learned_documents(history))
    hits = kb.search("one row per program", platform="hopper", kind="memory")
    assert hits[0].document.id == f"learned/{entry_id}"
    assert kb.search("one row per program", platform="cdna3", source="learned") == []


def test_modelled_results_are_never_distilled(db: Path) -> None:
    with History(db) as history:
        child = make_run(history, TimingKind.MODELLED, 0.05)
        assert distil(history, child) is None
        assert history_llm.list_entries(history) == []


def kernelevolve(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(Path(sys.executable).parent / "kernelevolve"), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_cli_learns_lists_and_removes_entries_and_history_shows_the_ledger(db: Path) -> None:
    from kernelevolve.search.llm.client import LlmCall

    with History(db) as history:
        child = make_run(history, TimingKind.MEASURED, 0.05)
        run_id = history.get_candidate(child).run_id  # type: ignore[union-attr]
        history_llm.record_call(
            history, LlmCall(run_id, "claude-sonnet-5-5", "episode", "ok", 1200, 300, cost_usd=0.0054)
        )
    cwd = db.parent.parent
    learned = kernelevolve("kb", "learn", str(run_id), "--json", cwd=cwd)
    assert learned.returncode == 0, learned.stderr
    [entry_id] = json.loads(learned.stdout)["entries"]
    listed = json.loads(kernelevolve("kb", "list", "--json", cwd=cwd).stdout)
    assert [e["id"] for e in listed["entries"]] == [entry_id]
    found = json.loads(kernelevolve("kb", "search", "row", "per", "program", "--json", cwd=cwd).stdout)
    assert found["results"][0]["id"] == f"learned/{entry_id}"
    runs = json.loads(kernelevolve("history", "--json", cwd=cwd).stdout)
    assert runs["runs"][0]["llm $"] == "$0.0054"
    shown = kernelevolve("history", "--run", str(run_id), cwd=cwd)
    assert "LLM ledger" in shown.stdout and "LLM: 1 call, 1.2k in / 300 out tokens, $0.0054" in shown.stdout
    removed = kernelevolve("kb", "remove", f"learned/{entry_id}", cwd=cwd)
    assert removed.returncode == 0 and f"removed learned/{entry_id}" in removed.stdout
    again = kernelevolve("kb", "remove", str(entry_id), cwd=cwd)
    assert again.returncode == 2 and again.stderr.strip().endswith(
        f"knowledge entry {entry_id} does not exist"
    )
