"""Settings are parsed tolerantly from every envelope clients use; bad values keep the default."""

from __future__ import annotations

import pytest
from kernelevolve.server.lsp.protocol import short_device
from kernelevolve.server.lsp.settings import Settings, parse_settings


def test_no_settings_gives_the_small_cpu_friendly_defaults() -> None:
    parsed = parse_settings(None)
    assert parsed.problems == []
    config = parsed.settings.search_config()
    assert (config.strategy, config.max_steps, config.draft_size, config.parallel) == ("greedy", 8, 2, 1)
    assert config.eval.device == "auto" and config.eval.hardware == "nvidia-h200"


@pytest.mark.parametrize(
    "raw",
    [
        {"maxSteps": 3, "strategy": "beam"},
        {"kernelEvolve": {"maxSteps": 3, "strategy": "beam"}},
        {"settings": {"maxSteps": 3, "strategy": "beam"}, "globalSettings": {"maxSteps": 9}},
        {"settings": [{"workspace": "file:///w", "maxSteps": 3}], "globalSettings": {"strategy": "beam"}},
        {"max_steps": 3, "strategy": "beam"},
    ],
)
def test_every_client_envelope_is_understood(raw: object) -> None:
    parsed = parse_settings(raw)
    assert parsed.problems == []
    assert (parsed.settings.max_steps, parsed.settings.strategy) == (3, "beam")


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("maxSteps", 0, "expected an integer >= 1"),
        ("maxSteps", 2.5, "expected an integer >= 1"),
        ("maxSteps", True, "expected an integer >= 1"),
        ("timeBudgetS", -1, "expected a number > 0 or null"),
        ("device", "tpu", "expected one of auto, cpu, cuda"),
        ("backend", "ray", "expected one of local"),
        ("llm", "yes", "expected true or false"),
        ("llmModel", "", "expected a non-empty string"),
    ],
)
def test_a_bad_value_is_named_and_the_previous_value_kept(key: str, value: object, expected: str) -> None:
    base = Settings(max_steps=5)
    parsed = parse_settings({key: value, "strategy": "mcts"}, base)
    (problem,) = parsed.problems
    assert problem.startswith(f"kernelEvolve.{key}: {expected}") and repr(value) in problem
    assert parsed.settings.strategy == "mcts"  # the good key still applies
    assert parsed.settings.max_steps == 5 or key != "maxSteps"


def test_nullable_settings_accept_null() -> None:
    parsed = parse_settings({"timeBudgetS": None, "patience": None, "parallel": None, "llmBudgetUsd": 0.5})
    assert parsed.problems == []
    assert parsed.settings.time_budget_s is None and parsed.settings.llm_budget_usd == 0.5


def test_unknown_keys_and_non_objects_are_reported_not_fatal() -> None:
    assert parse_settings({"colour": "red"}).problems == ["kernelEvolve.colour: unknown setting (ignored)"]
    assert (
        parse_settings({"interpreter": ["python"], "serverArgs": [], "trace": {"server": "off"}}).problems
        == []
    )
    parsed = parse_settings(["not", "an", "object"])
    assert parsed.settings == Settings() and "must be an object" in parsed.problems[0]


@pytest.mark.parametrize(
    ("device", "timing", "hardware", "label"),
    [
        ("NVIDIA H200", "measured", "nvidia-h200", "H200"),
        ("cpu (Triton interpreter)", "modelled", "nvidia-h200", "H200"),
        ("cpu (Triton interpreter)", "modelled", "nvidia-h100-sxm", "H100-SXM"),
        ("cpu (Triton interpreter)", "measured", None, "CPU"),
        ("NVIDIA GeForce RTX 4090", "measured", None, "GeForce RTX 4090"),
    ],
)
def test_device_labels_name_the_measured_gpu_or_the_modelled_hardware(
    device: str, timing: str, hardware: str | None, label: str
) -> None:
    assert short_device(device, timing, hardware) == label


def test_an_api_key_setting_reaches_the_credentials_module_and_nothing_else(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from kernelevolve.search.llm import credentials

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    parsed = parse_settings({"kernelEvolve": {"llmApiKey": "sk-ant-test-123", "llm": True}})
    try:
        assert credentials.resolve_api_key() == "sk-ant-test-123"
        assert "sk-ant-test-123" not in repr(parsed)
        assert parsed.problems == []
        bad = parse_settings({"llmApiKey": 42})
        assert bad.problems and "42" not in bad.problems[0]
    finally:
        credentials.set_settings_api_key(None)
