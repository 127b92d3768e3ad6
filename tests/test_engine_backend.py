"""The local backend's slots and GPU pinning, and the operator registry's notices."""

from __future__ import annotations

from pathlib import Path

import pytest
from kernelevolve.search.backend import LocalProcessBackend, default_slots, visible_gpus
from kernelevolve.search.engine import SearchConfig
from kernelevolve.search.operators.registry import build_operators, parse_not_covered
from kernelevolve.search.operators.tuning import TuningOperator


def test_visible_gpus_follow_cuda_visible_devices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,5")
    assert visible_gpus("auto") == [0, 1]  # indices into what the workers will see
    assert visible_gpus("cpu") == []
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert visible_gpus("cuda") == []
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "-1")
    assert visible_gpus("auto") == []


def test_slots_are_up_to_three_per_gpu_as_cores_allow_else_cores_minus_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("os.cpu_count", lambda: 16)
    assert default_slots([0]) == 3
    assert default_slots([0, 1, 2, 3, 4, 5, 6, 7]) == 8  # 15 spare cores: one worker per GPU
    monkeypatch.setattr("os.cpu_count", lambda: 8)
    assert default_slots([0, 1]) == 6
    assert default_slots([]) == 7
    monkeypatch.setattr("os.cpu_count", lambda: 1)
    assert default_slots([]) == 1
    backend = LocalProcessBackend("cpu", parallel=3)
    assert backend.slots == 3 and backend.gpus == []
    backend.close()


def test_registry_reports_a_missing_api_key_and_keeps_the_offline_operators(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from kernelevolve.search.history import History

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with History(tmp_path / "h.db") as history:
        run = history.create_run(
            kind="evolve", problem_path="p.py", problem_hash="x", signature=None, strategy="greedy",
            config={}, device="cpu", timing_kind="modelled",
        )  # fmt: skip
        ops = build_operators(SearchConfig(llm=True), history, run)
    assert ("info", "no API key: using the offline operators") in ops.notices
    assert [op.name for op in ops.drafters] == ["template"]
    assert isinstance(ops.refiners[0], TuningOperator) and "llm" not in [op.name for op in ops.refiners]


def test_not_covered_ops_are_parsed_from_the_operator_message() -> None:
    message = "not covered by the offline operators: aten.sort.default, aten.cumsum.default"
    assert parse_not_covered(message) == ["aten.sort.default", "aten.cumsum.default"]
    assert parse_not_covered("something else") == []
