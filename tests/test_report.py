"""`kernelevolve report RUN`: a self-contained HTML page of a real search run."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from engine_support import EvolvedRun, cli, evolve_once
from kernelevolve.search.history import History
from kernelevolve.search.report import ReportError, render_report

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def evolved(tmp_path_factory: pytest.TempPathFactory) -> EvolvedRun:
    return evolve_once(tmp_path_factory.mktemp("evolved"))


class Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def test_report_is_self_contained_with_tree_plot_and_every_node(evolved: EvolvedRun, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    proc = cli("report", str(evolved.summary["run_id"]), "--db", str(evolved.db), "--out", str(out), "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["path"] == str(out)
    page = out.read_text()
    parser = Tags()
    parser.feed(page)
    names = [t for t, _ in parser.tags]
    assert "script" not in names and "link" not in names and "img" not in names
    assert not re.search(r"(src|href)=\"(https?:)?//", page)  # no external assets
    assert names.count("svg") == 2  # the tree and the speedup plot
    with History(evolved.db) as history:
        candidates = history.list_candidates(evolved.summary["run_id"])
    for c in candidates:
        assert f'id="c{c.id}"' in page and f'href="#c{c.id}"' in page
    assert "Modelled timing" in page
    assert "+        add_kernel[grid]" in page  # a tuning diff, escaped into the page
    assert page.count("<polyline") == 1


def test_report_shows_failure_reasons_escaped(tmp_path: Path) -> None:
    from kernelevolve.search.results import EvalResult, Stage, Verdict

    with History(tmp_path / "h.db") as history:
        run = history.create_run(
            kind="evolve", problem_path="p.py", problem_hash="x", signature=None, strategy="mcts",
            config={}, device="cpu", timing_kind="modelled",
        )  # fmt: skip
        cid = history.add_candidate(run_id=run, parent_id=None, operator="seed", source="x = '<b>'\n")
        history.record_evaluation(
            cid, EvalResult(Verdict.REJECTED, Stage.COMPILE, reason="bad <tag> & co"), 0.0
        )
        history.add_candidate(run_id=run, parent_id=cid, operator="tuning", source="x = 2\n")
        history.add_event(run, "notice", {"level": "warning", "message": "not covered: aten.<sort>"})
        page = render_report(history, run)
        with pytest.raises(ReportError, match="no run 99"):
            render_report(history, 99)
    assert "bad &lt;tag&gt; &amp; co" in page and "<tag>" not in page
    assert "rejected at compile" in page and "pending" in page
    assert "not covered: aten.&lt;sort&gt;" in page


def test_report_of_a_missing_run_is_one_clear_error(evolved: EvolvedRun) -> None:
    proc = cli("report", "999", "--db", str(evolved.db))
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [f"kernelevolve: error: no run 999 in {evolved.db}"]
