"""Child processes that run the user's own code (graph capture, trace) get no credentials."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from kernelevolve.search.sandbox import without_secrets


def test_without_secrets_drops_credential_names_and_keeps_the_rest() -> None:
    env = {"ANTHROPIC_API_KEY": "k", "GITHUB_TOKEN": "t", "DB_PASSWORD": "p", "PATH": "/bin", "HOME": "/h"}
    assert without_secrets(env) == {"PATH": "/bin", "HOME": "/h"}


def test_a_traced_script_does_not_see_the_api_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = tmp_path / "user_script.py"
    seen = tmp_path / "seen.txt"
    script.write_text(
        "import os, pathlib\n"
        f"pathlib.Path({str(seen)!r}).write_text(os.environ.get('ANTHROPIC_API_KEY', '<absent>'))\n"
    )
    env = {**os.environ, "ANTHROPIC_API_KEY": "sk-ant-should-not-leak"}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "kernelevolve.server.cli",
            "trace",
            str(script),
            "--db",
            str(tmp_path / "h.db"),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        cwd=tmp_path,
    )
    output = proc.stdout + proc.stderr
    assert seen.read_text() == "<absent>", output[-2000:]
    assert "sk-ant-should-not-leak" not in output
