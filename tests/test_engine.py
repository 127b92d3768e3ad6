"""The search engine end to end: real harness, real SQLite history, Triton interpreter."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from engine_support import POOR_SEED, PROBLEM, EvolvedRun, evolve_once
from kernelevolve.search import events
from kernelevolve.search.config import EvalConfig
from kernelevolve.search.engine import Search, SearchConfig, SearchError
from kernelevolve.search.history import History
from kernelevolve.search.problem import ProblemError

pytestmark = pytest.mark.slow
QUICK = EvalConfig(seeds=(0,))


@pytest.fixture(scope="module")
def evolved(tmp_path_factory: pytest.TempPathFactory) -> EvolvedRun:
    return evolve_once(tmp_path_factory.mktemp("evolved"))


def test_evolve_improves_modelled_fitness_over_a_poor_seed(evolved: EvolvedRun) -> None:
    summary = evolved.summary
    assert summary["status"] == "finished" and summary["evaluated"] == 4
    best = summary["best"]
    assert best["timing"] == "modelled"
    with History(evolved.db) as history:
        candidates = history.list_candidates(summary["run_id"])
        seed = next(c for c in candidates if c.operator == "seed")
        winner = history.get_candidate(best["candidate_id"])
    assert winner is not None and winner.operator == "tuning"
    assert seed.fitness is not None and winner.fitness is not None
    assert winner.fitness > seed.fitness * 1.005, (seed.fitness, winner.fitness)
    assert best["speedup"] == pytest.approx(winner.speedup)
    assert summary["throughput"] > 0 and summary["throughput_unit"] == "per minute"


def test_every_candidate_is_distinct_and_committed_with_its_evaluation(evolved: EvolvedRun) -> None:
    with History(evolved.db) as history:
        candidates = history.list_candidates(evolved.summary["run_id"])
        run = history.get_run(evolved.summary["run_id"])
    assert len(candidates) == 4
    assert len({c.source_hash for c in candidates}) == 4
    assert all(c.status == "evaluated" and c.result is not None for c in candidates)
    assert all(c.parent_id is not None for c in candidates if c.operator == "tuning")
    assert run is not None and run.status == "finished" and run.timing_kind == "modelled"
    assert run.best_candidate_id == evolved.summary["best"]["candidate_id"]


def test_events_are_stored_in_order(evolved: EvolvedRun) -> None:
    with History(evolved.db) as history:
        stored = history.list_events(evolved.summary["run_id"])
    kinds = [e["kind"] for e in stored]
    assert kinds[0] == "run_started" and kinds[-1] == "run_finished"
    assert kinds.count("candidate_proposed") == 4 and kinds.count("candidate_evaluated") == 4
    evaluated = [e["payload"] for e in stored if e["kind"] == "candidate_evaluated"]
    assert [e["step"] for e in evaluated] == [1, 2, 3, 4]
    assert all(e["diff"].startswith("---") for e in evaluated)
    in_flight, most = 0, 0  # --parallel 2: a second proposal goes out while one evaluates
    for kind in kinds:
        in_flight += {"candidate_proposed": 1, "candidate_evaluated": -1}.get(kind, 0)
        most = max(most, in_flight)
    assert most == 2
    bests = [e["payload"]["fitness"] for e in stored if e["kind"] == "new_best"]
    assert bests == sorted(bests) and len(bests) >= 2


def test_warm_start_seeds_a_new_run_from_the_best_prior_kernel(evolved: EvolvedRun, tmp_path: Path) -> None:
    db = tmp_path / "warm.db"
    db.write_bytes(evolved.db.read_bytes())  # a copy: the shared run stays as it was
    seen: list[events.Event] = []
    config = SearchConfig(max_steps=1, draft_size=1, eval=QUICK)
    search = Search(PROBLEM, config, db, on_event=seen.append, export=False)
    outcome = search.run()
    search.close()
    started = next(e for e in seen if isinstance(e, events.RunStarted))
    assert started.warm_start_candidate_id == evolved.summary["best"]["candidate_id"]
    with History(db) as history:
        (candidate,) = history.list_candidates(outcome.run_id)
        prior = history.get_candidate(evolved.summary["best"]["candidate_id"])
    assert candidate.operator == "warm-start" and prior is not None and candidate.source == prior.source
    assert outcome.best_candidate_id == candidate.id


def test_cancel_from_another_thread_keeps_what_was_evaluated(tmp_path: Path) -> None:
    db = tmp_path / "cancel.db"
    seen: list[events.Event] = []
    config = SearchConfig(max_steps=10, parallel=1, warm_start=False, eval=QUICK)
    search: Search

    def on_event(event: events.Event) -> None:
        seen.append(event)
        if isinstance(event, events.CandidateEvaluated):
            threading.Thread(target=search.cancel).start()

    search = Search(PROBLEM, config, db, on_event=on_event, seed_path=POOR_SEED, export=False)
    outcome = search.run()
    search.close()
    assert outcome.status == "cancelled" and outcome.evaluated >= 1
    with History(db) as history:
        run = history.get_run(outcome.run_id)
        evaluated = history.list_candidates(outcome.run_id, status="evaluated")
    assert run is not None and run.status == "cancelled"
    assert len(evaluated) == outcome.evaluated
    assert isinstance(seen[-1], events.RunFinished) and seen[-1].status == "cancelled"


def test_no_first_candidate_finishes_with_best_null_and_the_reason(tmp_path: Path) -> None:
    problem = tmp_path / "sort_problem.py"
    problem.write_text(
        "import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n"
        "    def forward(self, x):\n        return torch.sort(x, dim=-1).values\n\n\n"
        "def get_inputs():\n    return [torch.randn(4, 8)]\n\n\ndef get_init_inputs():\n    return []\n"
    )
    search = Search(problem, SearchConfig(max_steps=2, warm_start=False), tmp_path / "h.db", export=False)
    outcome = search.run()
    search.close()
    assert outcome.best_candidate_id is None and outcome.evaluated == 0
    assert outcome.status == "finished"
    assert outcome.reason.startswith("no operator could make a first candidate")
    assert "not covered by the offline operators: aten.sort" in outcome.reason and "--seed" in outcome.reason
    assert any(op.startswith("aten.sort") for op in outcome.not_covered)
    with History(tmp_path / "h.db") as history:
        notices = [
            e["payload"]["message"] for e in history.list_events(outcome.run_id) if e["kind"] == "notice"
        ]
    assert any(m.startswith("not covered by the offline operators: aten.sort") for m in notices)


def test_bad_inputs_are_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ProblemError, match="problem file not found"):
        Search(tmp_path / "missing.py", SearchConfig(), tmp_path / "h.db")
    with pytest.raises(ProblemError, match="lacks class ModelNew"):
        Search(PROBLEM, SearchConfig(), tmp_path / "h.db", seed_path=PROBLEM)
    with pytest.raises(SearchError, match="no evolve run 42"):
        Search(PROBLEM, SearchConfig(), tmp_path / "h.db", resume_run=42)


def test_a_run_cannot_be_resumed_while_another_search_holds_it(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    config = SearchConfig(warm_start=False)
    first = Search(PROBLEM, config, db, seed_path=POOR_SEED, export=False)
    try:
        with pytest.raises(SearchError, match=f"run {first.run_id} is being evolved by another process"):
            Search(PROBLEM, config, db, resume_run=first.run_id)
    finally:
        first.close()
    with Search(PROBLEM, config, db, resume_run=first.run_id, export=False) as again:  # released on close
        assert again.run_id == first.run_id
