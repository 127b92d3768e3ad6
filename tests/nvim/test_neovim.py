"""Headless Neovim 0.7.2 (Debian's package) drives the real server end to end.

A second client, independent of pygls: its own JSON-RPC, its own capabilities (work-done
progress yes, inlay-hint refresh and workspace/configuration no). The Lua script (drive.lua)
records what arrives; this test asserts on it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
HERE = Path(__file__).resolve().parent
EXAMPLE = HERE.parents[1] / "examples" / "fused_elementwise"
NVIM = shutil.which("nvim")


@pytest.mark.skipif(NVIM is None, reason="nvim missing: `make system-deps` installs Debian's neovim")
def test_neovim_evolves_the_bundled_example(tmp_path: Path) -> None:
    shutil.copy(EXAMPLE / "problem.py", tmp_path / "problem.py")
    shutil.copy(EXAMPLE / "candidate.py", tmp_path / "seed_kernel.py")
    out = tmp_path / "seen.json"
    env = {
        **os.environ,
        "KE_OUT": str(out),
        "KE_PYTHON": sys.executable,
        "KE_SEED": "seed_kernel.py",
        "KE_WAIT_S": "400",
        "TRITON_INTERPRET": "1",
        "HOME": str(tmp_path),  # no user config, no shada
    }
    assert NVIM is not None
    proc = subprocess.run(
        [
            NVIM,
            "--headless",
            "-u",
            "NONE",
            "-i",
            "NONE",
            "-n",
            "problem.py",
            "-c",
            f"luafile {HERE / 'drive.lua'}",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=480,
        stdin=subprocess.DEVNULL,
    )
    assert out.exists(), f"nvim wrote nothing (rc={proc.returncode}): {proc.stderr[-2000:]}"
    seen = json.loads(out.read_text())
    assert seen["errors"] == [], seen["errors"]
    assert seen["action_titles"][0] == "Evolve kernel: Model"
    assert seen["started"]["joined"] is False

    (finished,) = seen["finished"]
    assert finished["status"] == "finished" and finished["evaluated"] == len(seen["candidates"]) == 2
    first = seen["candidates"][0]
    assert first["verdict"] == "correct" and first["timing"] == "modelled" and first["device"] == "H200"
    assert first["runId"] == finished["runId"] and "+class ModelNew" in first["diff"]

    token = seen["started"]["token"]
    kinds = [p["value"]["kind"] for p in seen["progress"] if p["token"] == token]
    assert kinds[0] == "begin" and "report" in kinds and kinds[-1] == "end"

    hover = seen["hover"]["contents"]["value"]
    assert f"#{finished['bestCandidateId']}" in hover and "modelled" in hover
    (hint,) = seen["hints"]
    assert hint["position"]["line"] == seen["model_line"] and "modelled H200" in hint["label"]
