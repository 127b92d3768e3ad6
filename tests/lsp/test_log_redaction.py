"""The API key given as an editor setting never reaches the server's log, even at -vv.

pygls logs every incoming message at INFO; the handler's filter must redact the key there.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from kernelevolve.server.redact import REDACTED, redact

KEY = "sk-ant-LEAKME-0123456789"


def _frame(payload: dict[str, object]) -> bytes:
    body = json.dumps(payload).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def test_redact_hides_setting_values_and_key_shaped_strings() -> None:
    text = '{"llmApiKey": "abc123", "other": 1} and sk-ant-xyz_789 and llm_api_key=\'q\''
    cleaned = redact(text)
    assert "abc123" not in cleaned and "sk-ant-xyz_789" not in cleaned and "'q'" not in cleaned
    assert cleaned.count(REDACTED) == 3
    assert '"other": 1' in cleaned


def test_serve_log_at_debug_level_never_contains_the_key(tmp_path: Path) -> None:
    log = tmp_path / "serve.log"
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "processId": None,
                "rootUri": tmp_path.as_uri(),
                "capabilities": {},
                "initializationOptions": {"settings": {"llmApiKey": KEY, "maxSteps": 2}},
            },
        },
        {"jsonrpc": "2.0", "method": "initialized", "params": {}},
        {
            "jsonrpc": "2.0",
            "method": "workspace/didChangeConfiguration",
            "params": {"settings": {"kernelEvolve": {"llmApiKey": KEY}}},
        },
        {"jsonrpc": "2.0", "id": 2, "method": "shutdown"},
        {"jsonrpc": "2.0", "method": "exit"},
    ]
    proc = subprocess.run(
        [sys.executable, "-m", "kernelevolve.server.cli", "serve", "-vv", "--log-file", str(log)],
        input=b"".join(_frame(m) for m in messages),
        capture_output=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    text = log.read_text()
    assert "initialize" in text  # the messages were logged ...
    assert REDACTED in text  # ... with the key's place marked
    assert KEY not in text
    assert KEY.encode() not in proc.stdout + proc.stderr
