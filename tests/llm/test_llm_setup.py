"""Building the operator from the environment, the key's absence from candidate processes, and
the registry's offline fallback."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from kernelevolve.search import history_llm
from kernelevolve.search.config import EvalConfig
from kernelevolve.search.engine import SearchConfig
from kernelevolve.search.harness import evaluate
from kernelevolve.search.history import History
from kernelevolve.search.llm.credentials import set_settings_api_key
from kernelevolve.search.operators.base import NodeView
from kernelevolve.search.operators.llm import build_llm_operator
from kernelevolve.search.operators.registry import build_operators
from kernelevolve.search.problem import ProblemSpec

from .conftest import DATA, FAKE_KEY, PROBLEM, context
from .messages_server import MessagesServer, Turn

GOOD = (DATA / "candidate_ok.py").read_text()
ENV_SNOOP = """
import os
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        raise RuntimeError("ENV-DUMP " + repr(sorted(os.environ.items())))
"""


@pytest.fixture(autouse=True)
def _no_settings_key():
    set_settings_api_key(None)
    yield
    set_settings_api_key(None)


def test_without_a_key_there_is_no_llm_operator_and_the_registry_says_so(
    history: History, run_id: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    assert build_llm_operator(SearchConfig(llm=True), history, run_id) is None
    ops = build_operators(SearchConfig(llm=True), history, run_id)
    assert ("info", "no API key: using the offline operators") in ops.notices
    assert all(op.name != "llm" for op in ops.drafters + ops.refiners)


def test_sdk_environment_variables_configure_key_base_url_and_model(
    history: History, run_id: int, spec: ProblemSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    with MessagesServer([Turn.text("Draft.\n```python\n" + GOOD + "```")]) as server:
        monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        op = build_llm_operator(
            SearchConfig(llm=True, llm_model="claude-opus-4-7", llm_budget_usd=1.0), history, run_id
        )
        assert op is not None
        parent = NodeView(candidate_id=1, source=GOOD, operator="template", result=None, fitness=0.0)
        [proposal] = op.propose(context(spec, run_id, parent=parent), 1, threading.Event())
    assert proposal.operator == "llm"
    assert server.requests[0].body["model"] == "claude-opus-4-7"
    [call] = history_llm.list_calls(history, run_id)
    assert call["model"] == "claude-opus-4-7" and call["cost_usd"] == pytest.approx(
        (1000 * 5 + 200 * 25) / 1e6
    )


def test_a_key_from_the_editor_settings_is_used_when_the_environment_has_none(
    history: History, run_id: int, spec: ProblemSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    set_settings_api_key(FAKE_KEY)
    with MessagesServer([Turn.text("Draft.\n```python\n" + GOOD + "```")]) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        op = build_llm_operator(SearchConfig(llm=True, llm_budget_usd=1.0), history, run_id)
        assert op is not None
        parent = NodeView(candidate_id=1, source=GOOD, operator="template", result=None, fitness=0.0)
        op.propose(context(spec, run_id, parent=parent), 1, threading.Event())
    assert server.requests, "the operator never called the API"
    headers = server.requests[0].headers
    # The SDK sends the key as x-api-key (1.x) or as a bearer token (2.x); either way, this key.
    assert FAKE_KEY in (headers.get("x-api-key"), headers.get("authorization", "").removeprefix("Bearer "))


def test_the_api_key_never_reaches_a_candidate_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", FAKE_KEY)
    # static checks off: this candidate reads os.environ on purpose and reports it in its error
    result = evaluate(PROBLEM, ENV_SNOOP, EvalConfig(skip_timing=True, seeds=(0,), static_checks=False))
    seen = (result.reason or "") + result.log_tail
    assert "ENV-DUMP" in seen and "PATH" in seen  # the dump really happened
    assert FAKE_KEY not in seen and "ANTHROPIC" not in seen


def test_history_ledger_tracks_spend_across_reopen(tmp_path: Path) -> None:
    from kernelevolve.search.llm.client import LlmCall

    path = tmp_path / "h.db"
    with History(path) as h:
        run = h.create_run(
            kind="evolve",
            problem_path="p.py",
            problem_hash="x",
            signature=None,
            strategy="greedy",
            config={},
            device="cpu",
            timing_kind=None,
        )
        ledger = history_llm.HistoryLedger(h, run)
        ledger.record(LlmCall(run, "claude-sonnet-5-5", "episode", "ok", cost_usd=0.25))
    with History(path) as h:  # a resumed run sees what was already spent
        assert history_llm.HistoryLedger(h, run).spent_usd() == pytest.approx(0.25)
        assert history_llm.run_spend(h, run).calls == 1


def test_drafts_are_left_to_the_template_library_when_it_covers_the_problem(
    history: History, run_id: int, spec: ProblemSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    with MessagesServer([Turn.text("Refined.\n```python\n" + GOOD + "```")]) as server:
        monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        op = build_llm_operator(SearchConfig(llm=True), history, run_id)
        assert op is not None
        assert op.propose(context(spec, run_id), 2, threading.Event()) == []  # x * 2 + 1 is pointwise
        assert server.requests == []
        template_node = NodeView(candidate_id=1, source=GOOD, operator="template", result=None, fitness=0.0)
        assert len(op.propose(context(spec, run_id, parent=template_node), 1, threading.Event())) == 1
    assert "<parent_kernel file='candidate.py'>" in json.dumps(server.requests[0].body)


def test_a_measured_win_seen_as_best_is_learned_and_retrieved_into_the_next_prompt(
    history: History, run_id: int, spec: ProblemSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The win is a recorded GPU result (no GPU here); what is under test is the loop from the best
    # node to a knowledge entry to the next prompt.
    from kernelevolve.search.results import TimingKind

    from .recorded import gpu_result

    win = gpu_result(TimingKind.MEASURED, 0.05)
    parent_id = history.add_candidate(run_id=run_id, parent_id=None, operator="template", source=GOOD)
    history.record_evaluation(parent_id, gpu_result(TimingKind.MEASURED, 0.15), fitness=0.8)
    child_id = history.add_candidate(
        run_id=run_id,
        parent_id=parent_id,
        operator="llm",
        source=GOOD.replace("256", "1024"),
        note="mul add fused with 1024-wide blocks",
    )
    history.record_evaluation(child_id, win, fitness=2.4)
    best = NodeView(candidate_id=child_id, source=GOOD, operator="llm", result=win, fitness=2.4)
    with MessagesServer([Turn.text("Next.\n```python\n" + GOOD.replace("256", "512") + "```")]) as server:
        monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        op = build_llm_operator(SearchConfig(llm=True), history, run_id)
        assert op is not None
        op.propose(context(spec, run_id, parent=best, best=best), 1, threading.Event())
    [entry] = history_llm.list_entries(history)
    assert entry.candidate_id == child_id
    assert f"<knowledge id='learned/{entry.id}'" in json.dumps(server.requests[0].body)
