"""Fixtures: a real History file, the loopback Messages server, and an LLM operator wired to both."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from kernelevolve.knowledge.kb import KnowledgeBase
from kernelevolve.search.engine import SearchConfig
from kernelevolve.search.history import History
from kernelevolve.search.history_llm import HistoryLedger
from kernelevolve.search.llm.client import ClientSettings, LlmClient
from kernelevolve.search.operators.base import NodeContext
from kernelevolve.search.operators.llm import LlmOperator, LlmOperatorSettings
from kernelevolve.search.problem import ProblemSpec, TensorSpec, source_hash

from .messages_server import MessagesServer

DATA = Path(__file__).parent / "data"
PROBLEM = DATA / "problem.py"
FAKE_KEY = "sk-ant-test-0123456789-secret-key"


@pytest.fixture(scope="session")
def kb() -> KnowledgeBase:
    return KnowledgeBase()


@pytest.fixture
def history(tmp_path: Path) -> Iterator[History]:
    h = History(tmp_path / ".kernelevolve" / "history.db")
    yield h
    h.close()


@pytest.fixture
def run_id(history: History) -> int:
    return history.create_run(
        kind="evolve",
        problem_path=str(PROBLEM),
        problem_hash=source_hash(PROBLEM.read_text()),
        signature="aten.mul.Tensor,aten.add.Tensor|float32[1000]|init()|cpu",
        strategy="greedy",
        config={},
        device="cpu",
        timing_kind=None,
    )


@pytest.fixture
def server() -> Iterator[MessagesServer]:
    with MessagesServer() as s:
        yield s


@pytest.fixture
def spec() -> ProblemSpec:
    source = PROBLEM.read_text()
    return ProblemSpec(
        path=PROBLEM,
        name="problem",
        source=source,
        source_hash=source_hash(source),
        inputs=[TensorSpec((1000,), "float32")],
        has_test_inputs=True,
        ops=["aten.mul.Tensor", "aten.add.Tensor"],
    )


MakeOperator = Callable[..., LlmOperator]


@pytest.fixture
def make_operator(history: History, run_id: int, server: MessagesServer, kb: KnowledgeBase) -> MakeOperator:
    def make(
        budget_usd: float | None = None, max_turns: int = 4, quick_tests: int = 2, timeout_s: float = 20
    ) -> LlmOperator:
        client = LlmClient(
            FAKE_KEY,
            HistoryLedger(history, run_id),
            run_id,
            ClientSettings(
                model="claude-sonnet-5-5", backoff_s=0.01, budget_usd=budget_usd, timeout_s=timeout_s
            ),
            base_url=server.base_url,
        )
        settings = LlmOperatorSettings(
            max_turns=max_turns, quick_tests=quick_tests, defer_drafts_to_template=False
        )
        return LlmOperator(client, history, run_id, SearchConfig(llm=True), kb, settings)

    return make


def context(spec: ProblemSpec, run_id: int, **kwargs: object) -> NodeContext:
    kwargs.setdefault("parent", None)
    return NodeContext(spec=spec, run_id=run_id, **kwargs)  # type: ignore[arg-type]


def no_cancel() -> threading.Event:
    return threading.Event()
