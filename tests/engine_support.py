"""One real `kernelevolve evolve` run shared by the engine, export and report tests.

Evaluations run in the real harness under the Triton interpreter (~10 s each here), so the run
is made once per test session and its database and files are reused read-only.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DATA = Path(__file__).parent / "data" / "engine"
PROBLEM = DATA / "add_problem.py"
POOR_SEED = DATA / "add_poor_seed.py"
_SCRIPT = Path(sys.executable).with_name("kernelevolve")
# The installed console script; where the package was installed without one (a --target install
# on a GPU machine), the same entry point through -m.
CLI = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "kernelevolve.server.cli"]


@dataclass(frozen=True)
class EvolvedRun:
    root: Path
    db: Path
    out: Path
    summary: dict[str, Any]
    stderr: str


_cache: dict[str, EvolvedRun] = {}


def cli(*args: str, timeout: float = 600, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, KERNELEVOLVE_DEBUG="1")
    return subprocess.run(
        [*CLI, *args], capture_output=True, text=True, timeout=timeout, check=False, env=env, cwd=cwd
    )


def evolve_once(root: Path) -> EvolvedRun:
    """A greedy search from the poor seed alone (draft size 1, so every later node is the tuning
    operator's work): 4 evaluations, 2 in flight."""
    if "run" not in _cache:
        db = root / "history.db"
        out = root / "out" / "add_evolved.py"
        proc = cli(
            "evolve", str(PROBLEM), "--seed", str(POOR_SEED), "--max-steps", "4", "--parallel", "2",
            "--patience", "4", "--draft-size", "1", "--db", str(db), "--out", str(out), "--no-warm-start", "--json",
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        _cache["run"] = EvolvedRun(
            root, db, out, json.loads(proc.stdout.strip().splitlines()[-1]), proc.stderr
        )
    return _cache["run"]
