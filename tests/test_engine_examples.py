"""Every bundled example: the engine, with the offline operators alone (no seed, no warm start),
makes a candidate the harness proves correct. One evaluation each keeps this affordable on the
CPU interpreter; tests/test_engine.py shows the search improving on its first draft."""

from __future__ import annotations

from pathlib import Path

import pytest
from kernelevolve.search.config import EvalConfig
from kernelevolve.search.engine import Search, SearchConfig

pytestmark = pytest.mark.slow
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
NAMES = sorted(p.parent.name for p in EXAMPLES.glob("*/problem.py"))


def test_examples_are_bundled() -> None:
    assert len(NAMES) >= 6, NAMES


@pytest.mark.parametrize("name", NAMES)
def test_offline_operators_find_a_correct_kernel(name: str, tmp_path: Path) -> None:
    config = SearchConfig(max_steps=1, draft_size=1, warm_start=False, eval=EvalConfig(seeds=(0,)))
    with Search(EXAMPLES / name / "problem.py", config, tmp_path / "h.db", export=False) as search:
        outcome = search.run()
        best = search.history.best_candidate(outcome.run_id)
    assert outcome.status == "finished" and outcome.not_covered == []
    assert outcome.best_candidate_id is not None, outcome.reason
    assert best is not None and best.operator == "template" and best.timing_kind == "modelled"
