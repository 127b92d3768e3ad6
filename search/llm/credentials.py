"""Where the API key comes from: ANTHROPIC_API_KEY (as the SDK reads it), else the editor's settings.

The key lives only in this module and in the SDK client; it is never part of SearchConfig (which
history stores), events, notes or logs. Candidate workers get a scrubbed environment from the
harness, so the key never reaches generated code either.
"""

from __future__ import annotations

import os
import threading

_lock = threading.Lock()
_settings_key: str | None = None


def set_settings_api_key(key: str | None) -> None:
    """Called by the language server when its settings carry a key (``kernelEvolve.llm.apiKey``)."""
    global _settings_key
    with _lock:
        _settings_key = key.strip() if key and key.strip() else None


def resolve_api_key() -> str | None:
    env = os.environ.get("ANTHROPIC_API_KEY", "").strip()
    if env:
        return env
    with _lock:
        return _settings_key
