"""The server's settings: a typed schema with defaults, parsed tolerantly from client JSON.

Accepted shapes (docs/editor.md): the settings object itself, ``{"kernelEvolve": {...}}``, or
ruff's ``{"settings": {...} | [{...}], "globalSettings": {...}}``. Keys are camelCase; snake_case
is accepted too. A bad value keeps the default and yields a message naming the key.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any

from kernelevolve.search.config import EvalConfig
from kernelevolve.search.engine import SearchConfig
from kernelevolve.search.llm.credentials import set_settings_api_key

SECTION = "kernelEvolve"
STRATEGIES = ("greedy", "beam", "mcts", "evolve")
DEVICES = ("auto", "cpu", "cuda")
BACKENDS = ("local",)
CLIENT_KEYS = {"interpreter", "serverArgs", "trace"}  # the editor client's own settings: not ours
API_KEY_KEYS = ("llmApiKey", "llm_api_key")  # handed to the credentials module, never kept here


@dataclass(frozen=True)
class Settings:
    # Defaults give a first correct candidate within minutes on a 2-core CPU (modelled timing).
    strategy: str = "greedy"
    max_steps: int = 8
    time_budget_s: float | None = 900.0
    patience: int | None = 6
    draft_size: int = 2
    parallel: int | None = 1
    target_speedup: float | None = None
    device: str = "auto"
    backend: str = "local"
    hardware: str = "nvidia-h200"
    llm: bool = False
    llm_model: str | None = None
    llm_budget_usd: float | None = None
    db_path: str = ".kernelevolve/history.db"
    watch: bool = True

    def search_config(self) -> SearchConfig:
        eval_config = EvalConfig(device=self.device, hardware=self.hardware)  # type: ignore[arg-type]
        return SearchConfig(
            strategy=self.strategy,  # type: ignore[arg-type]
            max_steps=self.max_steps,
            time_budget_s=self.time_budget_s,
            patience=self.patience,
            target_speedup=self.target_speedup,
            draft_size=self.draft_size,
            parallel=self.parallel,
            eval=eval_config,
            llm=self.llm,
            llm_model=self.llm_model,
            llm_budget_usd=self.llm_budget_usd,
        )


@dataclass
class ParsedSettings:
    settings: Settings
    problems: list[str] = field(default_factory=list)  # one line per bad value or unknown key


def _int_at_least(low: int, optional: bool) -> Any:
    def check(v: Any) -> Any:
        if v is None and optional:
            return None
        if isinstance(v, bool) or not isinstance(v, int | float) or int(v) != v or v < low:
            raise ValueError(f"expected an integer >= {low}{' or null' if optional else ''}")
        return int(v)

    return check


def _positive_number(optional: bool) -> Any:
    def check(v: Any) -> Any:
        if v is None and optional:
            return None
        if isinstance(v, bool) or not isinstance(v, int | float) or v <= 0:
            raise ValueError(f"expected a number > 0{' or null' if optional else ''}")
        return float(v)

    return check


def _choice(options: tuple[str, ...]) -> Any:
    def check(v: Any) -> Any:
        if v not in options:
            raise ValueError(f"expected one of {', '.join(options)}")
        return v

    return check


def _boolean(v: Any) -> Any:
    if not isinstance(v, bool):
        raise ValueError("expected true or false")
    return v


def _string(optional: bool) -> Any:
    def check(v: Any) -> Any:
        if v is None and optional:
            return None
        if not isinstance(v, str) or not v.strip():
            raise ValueError("expected a non-empty string")
        return v

    return check


_CHECKS: dict[str, Any] = {
    "strategy": _choice(STRATEGIES),
    "max_steps": _int_at_least(1, False),
    "time_budget_s": _positive_number(True),
    "patience": _int_at_least(1, True),
    "draft_size": _int_at_least(1, False),
    "parallel": _int_at_least(1, True),
    "target_speedup": _positive_number(True),
    "device": _choice(DEVICES),
    "backend": _choice(BACKENDS),
    "hardware": _string(False),
    "llm": _boolean,
    "llm_model": _string(True),
    "llm_budget_usd": _positive_number(True),
    "db_path": _string(False),
    "watch": _boolean,
}
assert set(_CHECKS) == {f.name for f in dataclasses.fields(Settings)}


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def unwrap(raw: Any) -> dict[str, Any]:
    """The flat settings object inside any accepted envelope ({} when there is none)."""
    if not isinstance(raw, dict):
        return {}
    if SECTION in raw and isinstance(raw[SECTION], dict):
        return unwrap(raw[SECTION]) or dict(raw[SECTION])
    if "settings" in raw or "globalSettings" in raw:
        merged: dict[str, Any] = {}
        glob = raw.get("globalSettings")
        if isinstance(glob, dict):
            merged.update(glob)
        local = raw.get("settings")
        if isinstance(local, list):
            local = local[0] if local else None
        if isinstance(local, dict):
            merged.update(local)
        return {k: v for k, v in merged.items() if k not in ("workspace", "cwd")}
    return dict(raw)


def parse_settings(raw: Any, base: Settings | None = None) -> ParsedSettings:
    """Settings from client JSON over ``base``; every bad value is kept at its previous value."""
    base = base or Settings()
    problems: list[str] = []
    if raw is not None and not isinstance(raw, dict):
        return ParsedSettings(base, [f"{SECTION} settings must be an object, got {type(raw).__name__}"])
    values: dict[str, Any] = {}
    flat = unwrap(raw)
    for key in API_KEY_KEYS:
        if key in flat:
            secret = flat.pop(key)
            if secret is None or isinstance(secret, str):
                set_settings_api_key(secret)
            else:  # the value is never echoed: it may be a mistyped key
                problems.append(f"{SECTION}.llmApiKey: expected a string (value not shown)")
    for key, value in flat.items():
        if key in CLIENT_KEYS:
            continue
        name = _snake(key)
        if name not in _CHECKS:
            problems.append(f"{SECTION}.{key}: unknown setting (ignored)")
            continue
        try:
            values[name] = _CHECKS[name](value)
        except ValueError as exc:
            problems.append(f"{SECTION}.{camel(name)}: {exc}; got {value!r}, using {getattr(base, name)!r}")
    return ParsedSettings(dataclasses.replace(base, **values), problems)
