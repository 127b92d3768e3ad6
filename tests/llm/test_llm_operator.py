"""The LLM operator end to end: the real anthropic SDK against the loopback Messages server, a real
History file, the real knowledge base and the real sandboxed harness for quick tests."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
from kernelevolve.search import history_llm
from kernelevolve.search.config import EvalConfig
from kernelevolve.search.harness import evaluate
from kernelevolve.search.history import History
from kernelevolve.search.operators.base import NodeView, StopSearch
from kernelevolve.search.problem import ProblemSpec

from .conftest import DATA, PROBLEM, MakeOperator, context, no_cancel
from .messages_server import MessagesServer, Turn

GOOD = (DATA / "candidate_ok.py").read_text()
UNMASKED = GOOD.replace(", mask=mask, other=0.0)", ")").replace(", mask=mask)", ")")
TORCH_CHEAT = GOOD.replace(
    "        scale_shift_kernel[(triton.cdiv(n, 256),)](x, out, n, BLOCK=256)\n        return out",
    "        return torch.add(torch.mul(x, 2.0), 1.0)",
)


def text_of(message: dict) -> str:  # type: ignore[type-arg]
    content = message["content"]
    return content if isinstance(content, str) else "".join(b.get("text", "") for b in content)


def fenced(note: str, source: str) -> str:
    return f"{note}\n\n```python\n{source}```\n"


@pytest.fixture(scope="module")
def unmasked_parent_result():  # a real rejection from the harness: the tail mask is missing
    result = evaluate(PROBLEM, UNMASKED, EvalConfig(skip_timing=True, seeds=(0,)))
    assert not result.correct
    return result


def test_prompt_carries_diagnosis_retrieved_documents_and_harness_feedback(
    make_operator: MakeOperator,
    server: MessagesServer,
    spec: ProblemSpec,
    run_id: int,
    unmasked_parent_result,
) -> None:
    server.add(Turn.text(fenced("Restored the tail mask on the load and the store.", GOOD)))
    parent = NodeView(
        candidate_id=None, source=UNMASKED, operator="template", result=unmasked_parent_result, fitness=0.0
    )  # type: ignore[arg-type]
    ctx = context(spec, run_id, parent=parent, failures=["BLOCK=4096 broke correctness on test:1"])
    [proposal] = make_operator().propose(ctx, 1, no_cancel())

    assert proposal.source == GOOD and proposal.operator == "llm"
    assert proposal.note == "Restored the tail mask on the load and the store."
    body = server.requests[0].body
    system = body["system"]
    assert system[-1]["cache_control"] == {"type": "ephemeral"}
    assert "<constraint id='constraints/anti-cheat'>" in system[0]["text"]
    user = text_of(body["messages"][0])
    assert unmasked_parent_result.reason.strip()[:80] in user  # the harness feedback, verbatim
    assert "Bottleneck: correctness (phase: debug)" in user
    assert "get_inputs(): float32[1000]" in user and "aten.mul.Tensor, aten.add.Tensor" in user
    assert "<knowledge id='guidance/debugging'" in user  # retrieved for a correctness diagnosis
    assert "BLOCK=4096 broke correctness on test:1" in user  # negative memory
    assert "nvidia-h200 (hopper (sm_90)): 132 SMs" in user  # facts from the hardware TOML
    assert {t["name"] for t in body["tools"]} >= {
        "read_file",
        "replace_in_file",
        "write_file",
        "lint",
        "quick_test",
    }
    assert body["stream"] is True and body["model"] == "claude-sonnet-5-5"


def test_tool_episode_reads_edits_quick_tests_then_finishes_with_the_edited_file(
    make_operator: MakeOperator, server: MessagesServer, spec: ProblemSpec, run_id: int, history: History
) -> None:
    parent = NodeView(candidate_id=None, source=UNMASKED, operator="template", result=None, fitness=0.0)  # type: ignore[arg-type]
    server.add(
        Turn.tools([("read_file", {"path": "candidate.py"})], text="Let me look at the kernel."),
        Turn.tools(
            [
                (
                    "replace_in_file",
                    {
                        "path": "candidate.py",
                        "old": "x = tl.load(x_ptr + offs)",
                        "new": "x = tl.load(x_ptr + offs, mask=mask, other=0.0)",
                    },
                ),
                (
                    "replace_in_file",
                    {"path": "candidate.py", "old": "x * 2.0 + 1.0)", "new": "x * 2.0 + 1.0, mask=mask)"},
                ),
                ("lint", {}),
            ]
        ),
        Turn.tools([("quick_test", {})]),
        Turn.text("Masked the tail of the load and the store."),
    )
    [proposal] = make_operator().propose(context(spec, run_id, parent=parent), 1, no_cancel())

    assert proposal.source == GOOD
    read_result = server.requests[1].body["messages"][-1]["content"][0]
    assert read_result["type"] == "tool_result" and "tl.load(x_ptr + offs)" in read_result["content"]
    edits = server.requests[2].body["messages"][-1]["content"]
    assert [r["content"] for r in edits] == ["replaced 1 occurrence", "replaced 1 occurrence", "lint passed"]
    quick = server.requests[3].body["messages"][-1]["content"][0]["content"]
    assert quick.startswith("PASSED correctness")  # the real sandboxed harness ran it
    [episode] = history_llm.list_episodes(history, run_id)
    assert episode["outcome"] == "proposed" and episode["tool_calls"] == 5 and episode["turns"] == 4
    # every call of the episode is tied to the proposal; each turn marks the conversation for caching
    assert {c["candidate_hash"] for c in history_llm.list_calls(history, run_id)} == {
        episode["candidate_hash"]
    }
    for request in server.requests:
        marks = [b for m in request.body["messages"] for b in m["content"] if "cache_control" in b]
        assert marks == [request.body["messages"][-1]["content"][-1]]


def test_retries_429_529_500_and_mid_stream_overload_then_succeeds(
    make_operator: MakeOperator, server: MessagesServer, spec: ProblemSpec, run_id: int, history: History
) -> None:
    server.add(
        Turn.error(429, "rate_limit_error"),
        Turn.error(529, "overloaded_error"),
        Turn.error(500, "api_error"),
        Turn.text("partial " * 20, fail_mid_stream="overloaded_error"),
        Turn.text(fenced("First kernel.", GOOD)),
    )
    [proposal] = make_operator().propose(context(spec, run_id), 1, no_cancel())
    assert proposal.source == GOOD
    calls = history_llm.list_calls(history, run_id)
    assert [c["status"] for c in calls] == ["retried"] * 4 + ["ok"]
    assert calls[0]["error"] == "rate_limit_error (HTTP 429)"
    assert calls[1]["error"] == "overloaded_error (HTTP 529)"
    assert calls[3]["error"] == "overloaded_error (mid-stream)"
    assert calls[3]["input_tokens"] == 1000  # a stream that broke still billed its input
    assert [c["attempt"] for c in calls] == [1, 2, 3, 4, 5]


def test_a_stalled_stream_times_out_and_is_retried(
    make_operator: MakeOperator, server: MessagesServer, spec: ProblemSpec, run_id: int, history: History
) -> None:
    server.add(
        Turn.text(fenced("Slow.", GOOD), stall_after_events=3),
        Turn.text(fenced("Answered after the timeout.", GOOD)),
    )
    [proposal] = make_operator(timeout_s=1.0).propose(context(spec, run_id), 1, no_cancel())
    assert proposal.note == "Answered after the timeout."
    calls = history_llm.list_calls(history, run_id)
    assert [(c["status"], c["error"]) for c in calls] == [
        ("retried", "ReadTimeout (network, mid-stream)"),
        ("ok", None),
    ]


def test_non_retryable_error_is_recorded_and_the_search_goes_on(
    make_operator: MakeOperator, server: MessagesServer, spec: ProblemSpec, run_id: int, history: History
) -> None:
    server.add(Turn.error(400, "invalid_request_error"), Turn.text(fenced("Draft.", GOOD)))
    op = make_operator()
    assert op.propose(context(spec, run_id), 1, no_cancel()) == []
    [episode] = history_llm.list_episodes(history, run_id)
    assert episode["outcome"] == "api_error" and "invalid_request_error (HTTP 400)" in episode["detail"]
    assert len(op.propose(context(spec, run_id), 1, no_cancel())) == 1


def test_budget_spent_stops_the_run_before_another_call(
    make_operator: MakeOperator, server: MessagesServer, spec: ProblemSpec, run_id: int, history: History
) -> None:
    # 1000 in + 200 out tokens at $2/$10 per MTok = $0.004 per call; a $0.003 budget allows one call.
    server.add(Turn.text(fenced("Draft.", GOOD)), Turn.text(fenced("Another.", GOOD.replace("256", "512"))))
    op = make_operator(budget_usd=0.003)
    assert len(op.propose(context(spec, run_id), 1, no_cancel())) == 1
    with pytest.raises(StopSearch, match=r"LLM budget spent: \$0.0040 of \$0.00"):
        op.propose(context(spec, run_id), 1, no_cancel())
    assert len(server.requests) == 1
    assert history_llm.run_spend(history, run_id).cost_usd == pytest.approx(0.004)
    assert [e["outcome"] for e in history_llm.list_episodes(history, run_id)] == ["proposed", "budget"]


def test_budget_running_out_mid_propose_keeps_paid_proposals_and_stops_at_the_next_call(
    make_operator: MakeOperator, server: MessagesServer, spec: ProblemSpec, run_id: int
) -> None:
    server.add(Turn.text(fenced("Draft.", GOOD)))
    op = make_operator(budget_usd=0.003)
    assert len(op.propose(context(spec, run_id), 3, no_cancel())) == 1
    with pytest.raises(StopSearch, match="LLM budget spent"):
        op.propose(context(spec, run_id), 1, no_cancel())
    assert len(server.requests) == 1


def test_cancel_mid_stream_returns_promptly_and_records_a_cancelled_call(
    make_operator: MakeOperator, server: MessagesServer, spec: ProblemSpec, run_id: int, history: History
) -> None:
    server.add(Turn.text(fenced("Slow.", GOOD), stall_after_events=3))
    cancel = threading.Event()
    threading.Thread(target=lambda: (server.stalled.wait(10), cancel.set()), daemon=True).start()
    started = time.monotonic()
    assert make_operator().propose(context(spec, run_id), 1, cancel) == []
    assert time.monotonic() - started < 5
    [call] = history_llm.list_calls(history, run_id)
    assert call["status"] == "cancelled" and call["input_tokens"] == 1000
    assert history_llm.list_episodes(history, run_id)[0]["outcome"] == "cancelled"


@pytest.mark.parametrize(
    ("replies", "outcome", "detail"),
    [
        (["I would add a mask to the kernel.", "Still thinking about masks."], "no_code", "held no code"),
        ([fenced("Try.", "def broken(:\n    pass\n")] * 2, "invalid", "syntax error"),
        ([fenced("Use torch.", TORCH_CHEAT)] * 2, "invalid", "static anti-cheat check failed"),
        ([Turn.text("```python\nimport torch\n", stop_reason="max_tokens")] * 2, "no_code", "cut off"),
    ],
    ids=["no-code", "does-not-parse", "reward-hack", "cut-off"],
)
def test_malformed_answers_become_recorded_failures_and_the_search_goes_on(
    make_operator: MakeOperator,
    server: MessagesServer,
    spec: ProblemSpec,
    run_id: int,
    history: History,
    replies: list[str | Turn],
    outcome: str,
    detail: str,
) -> None:
    server.add(
        *(r if isinstance(r, Turn) else Turn.text(r) for r in replies),
        Turn.text(fenced("A real kernel.", GOOD)),
    )
    op = make_operator(max_turns=2)
    assert op.propose(context(spec, run_id), 1, no_cancel()) == []
    [episode] = history_llm.list_episodes(history, run_id)
    assert episode["outcome"] == outcome and detail in episode["detail"]
    repair = text_of(server.requests[1].body["messages"][-1])
    assert repair.startswith("Your answer cannot be used:") and detail in repair
    # the next step goes on, and the failure is in its negative memory
    [proposal] = op.propose(context(spec, run_id), 1, no_cancel())
    assert proposal.source == GOOD
    assert "an answer was unusable" in text_of(server.requests[2].body["messages"][0])


def test_a_hack_fixed_after_lint_feedback_is_proposed(
    make_operator: MakeOperator, server: MessagesServer, spec: ProblemSpec, run_id: int
) -> None:
    server.add(Turn.text(fenced("Use torch.", TORCH_CHEAT)), Turn.text(fenced("Kernel instead.", GOOD)))
    [proposal] = make_operator(max_turns=2).propose(context(spec, run_id), 1, no_cancel())
    assert proposal.source == GOOD


def test_duplicate_of_a_known_candidate_is_not_proposed(
    make_operator: MakeOperator, server: MessagesServer, spec: ProblemSpec, run_id: int, history: History
) -> None:
    from kernelevolve.search.problem import source_hash

    server.add(Turn.text(fenced("Same again.", GOOD)))
    ctx = context(spec, run_id, known_hashes=frozenset({source_hash(GOOD)}))
    assert make_operator().propose(ctx, 1, no_cancel()) == []
    assert history_llm.list_episodes(history, run_id)[0]["outcome"] == "duplicate"


def test_ledger_summary_line(
    make_operator: MakeOperator, server: MessagesServer, spec: ProblemSpec, run_id: int, history: History
) -> None:
    assert history_llm.ledger_summary(history, run_id) == ""
    server.add(
        Turn.error(429, "rate_limit_error"), Turn.text(fenced("Draft.", GOOD), cache_read_input_tokens=4000)
    )
    make_operator().propose(context(spec, run_id), 1, no_cancel())
    assert history_llm.ledger_summary(history, run_id) == (
        "LLM: 2 calls, 1 failed, 1.0k in, 4.0k cached / 200 out tokens, $0.0048 (claude-sonnet-5-5)"
    )


def test_api_key_is_absent_from_history_and_sent_only_as_the_auth_header(
    make_operator: MakeOperator,
    server: MessagesServer,
    spec: ProblemSpec,
    run_id: int,
    history: History,
    tmp_path: Path,
) -> None:
    from .conftest import FAKE_KEY

    server.add(Turn.error(401, "authentication_error"))
    make_operator().propose(context(spec, run_id), 1, no_cancel())
    server.add(Turn.text(fenced("Draft.", GOOD)))
    make_operator().propose(context(spec, run_id), 1, no_cancel())
    # this SDK version sends the key as a bearer token (older ones used x-api-key): only there
    auth = {k: v for k, v in server.requests[0].headers.items() if FAKE_KEY in v}
    assert auth in ({"authorization": f"Bearer {FAKE_KEY}"}, {"x-api-key": FAKE_KEY})
    assert all(FAKE_KEY not in json.dumps(r.body) for r in server.requests)
    history.close()
    for f in (tmp_path / ".kernelevolve").iterdir():  # db, -wal, -shm
        assert FAKE_KEY.encode() not in f.read_bytes(), f
