"""Keep the API key out of logs: pygls logs whole messages (initialize, configuration) at INFO."""

from __future__ import annotations

import logging
import re

_SETTING = re.compile(r"""(["']?llm_?[Aa]pi_?[Kk]ey["']?\s*[:=]\s*)(["'])(?:(?!\2).)*\2""")
_ANTHROPIC_KEY = re.compile(r"sk-ant-[A-Za-z0-9_\-]+")
REDACTED = "<redacted>"


def redact(text: str) -> str:
    from kernelevolve.search.llm.credentials import resolve_api_key

    text = _SETTING.sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}{m.group(2)}", text)
    text = _ANTHROPIC_KEY.sub(REDACTED, text)
    key = resolve_api_key()
    return text.replace(key, REDACTED) if key else text


class RedactSecrets(logging.Filter):
    """A handler filter: the formatted message, with any API key replaced."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        return True
