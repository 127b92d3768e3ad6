"""The real engine with the LLM operator on (`Search(..., SearchConfig(llm=True))` and
`kernelevolve evolve --llm`), against the loopback Messages server: the LLM drafts, the offline
tuning operator refines what it wrote, the ledger lands in history and the budget ends the run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from kernelevolve.search import history_llm
from kernelevolve.search.config import EvalConfig
from kernelevolve.search.engine import Search, SearchConfig
from kernelevolve.search.events import Event, Notice
from kernelevolve.search.history import History

from .conftest import DATA, FAKE_KEY
from .messages_server import MessagesServer, Turn

# cumsum is outside the offline template library, so the LLM drafts (tests/llm/data/cumsum_*.py)
GOOD = (DATA / "cumsum_candidate.py").read_text()
ANSWER = Turn.text(f"One program per row with tl.cumsum over the whole row.\n```python\n{GOOD}```\n")

pytestmark = pytest.mark.slow


@pytest.fixture
def problem(tmp_path: Path) -> Path:
    target = tmp_path / "problem.py"
    target.write_text((DATA / "cumsum_problem.py").read_text())
    return target


def small_config(**kwargs: object) -> SearchConfig:
    return SearchConfig(
        llm=True,
        max_steps=3,
        draft_size=1,
        patience=None,
        parallel=1,
        warm_start=False,
        eval=EvalConfig(seeds=(0,), compile_baseline=False, time_test_inputs=False),
        **kwargs,  # type: ignore[arg-type]
    )


def test_search_with_llm_drafts_an_uncovered_op_then_tuning_refines_and_the_ledger_is_kept(
    problem: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    events: list[Event] = []
    with MessagesServer(fallback=ANSWER) as server:
        monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        db = tmp_path / ".kernelevolve" / "history.db"
        search = Search(problem, small_config(), db, on_event=events.append, export=False)
        outcome = search.run()
    assert outcome.status == "finished", outcome.reason
    with History(db) as history:
        candidates = history.list_candidates(outcome.run_id)
        by_id = {c.id: c for c in candidates}
        llm = [c for c in candidates if c.operator == "llm"]
        assert llm and llm[0].source == GOOD and llm[0].verdict == "correct"
        assert llm[0].note == "One program per row with tl.cumsum over the whole row."
        refined = [c for c in candidates if c.parent_id is not None and by_id[c.parent_id].operator == "llm"]
        assert any(c.operator == "tuning" for c in refined), [(c.operator, c.parent_id) for c in candidates]
        spend = history_llm.run_spend(history, outcome.run_id)
        assert spend.calls == len(server.requests) >= 1
        assert history_llm.ledger_summary(history, outcome.run_id).startswith("LLM: ")
        episodes = history_llm.list_episodes(history, outcome.run_id)
        assert episodes[0]["candidate_hash"] == llm[0].source_hash
    assert not any(isinstance(e, Notice) and "no API key" in e.message for e in events)
    assert all(FAKE_KEY not in json.dumps(e.__dict__, default=str) for e in events)


def test_spent_budget_ends_the_run_with_that_reason(
    problem: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with MessagesServer(fallback=ANSWER) as server:
        monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        config = small_config(llm_budget_usd=0.0)  # no spend allowed: not even one call
        outcome = Search(problem, config, tmp_path / ".kernelevolve" / "history.db", export=False).run()
    assert outcome.reason.startswith("LLM budget spent: $0.0000 of $0.00")
    assert server.requests == []


def test_evolve_cli_without_a_key_says_once_that_it_uses_the_offline_operators(
    problem: Path, tmp_path: Path
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    proc = subprocess.run(
        [
            str(Path(sys.executable).parent / "kernelevolve"),
            "evolve",
            str(problem),
            "--llm",
            "--max-steps",
            "1",
            "--json",
            "--db",
            str(tmp_path / "h.db"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=tmp_path,
    )
    assert (proc.stdout + proc.stderr).count("no API key: using the offline operators") == 1, proc.stderr
