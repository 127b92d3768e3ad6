"""The CLI's frame: discovery of subcommands, common options, bad input, history and show.

Most tests call ``main`` in-process (fast); a few run the installed ``kernelevolve`` script as a
real subprocess to pin the exit codes and streams a script sees. The rows shown by ``history`` and
``show`` here are written through the History API with hand-built results (GPU-measured rows
cannot come from this CPU machine); end-to-end evaluations are in test_cli_eval.py.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from kernelevolve.search.history import History
from kernelevolve.search.migrations import MIGRATIONS, Migration
from kernelevolve.search.results import (
    EvalResult,
    Fingerprint,
    InputSetResult,
    Roofline,
    ShapeTiming,
    Stage,
    TimingKind,
    TimingStats,
    Verdict,
)
from kernelevolve.server import cli, render
from kernelevolve.server.commands import history as history_command
from rich.console import Console

DATA = Path(__file__).parent / "data" / "cli"
PROBLEM = DATA / "problem_add_relu.py"
CANDIDATE = DATA / "candidate_add_relu.py"
ANSI = re.compile(r"\x1b\[")


def kernelevolve_command() -> list[str]:
    script = Path(sys.executable).parent / "kernelevolve"
    return [str(script)] if script.exists() else [sys.executable, "-m", "kernelevolve.server.cli"]


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*kernelevolve_command(), *args], capture_output=True, text=True, cwd=cwd, timeout=120, check=False
    )


def measured_result(ms: float = 0.5) -> EvalResult:
    fp = Fingerprint(
        device="NVIDIA H200",
        driver="570.86",
        cuda="12.8",
        torch="2.11.0",
        triton="3.6.0",
        python="3.12.3",
    )
    return EvalResult(
        verdict=Verdict.CORRECT,
        stage=Stage.DONE,
        timing_kind=TimingKind.MEASURED,
        input_sets=[
            InputSetResult("seed:0", [[4, 33], [4, 33]], ["float32", "float32"], True, 0.0, 0.0),
            InputSetResult("test:0", [[1], [1]], ["float32", "float32"], True, float("nan"), 0.0),
        ],
        timings=[
            ShapeTiming(
                "seed:0",
                [[4, 33], [4, 33]],
                TimingKind.MEASURED,
                TimingStats(ms, ms * 0.98, ms * 0.99, ms * 1.01, 100),
                TimingStats(1.0, 0.98, 0.99, 1.01, 100),
                TimingStats(0.8, 0.78, 0.79, 0.81, 100),
                roofline=Roofline("nvidia-h200", 1584, 132, 0.25, "memory"),
            )
        ],
        fingerprint=fp,
    )


def modelled_result() -> EvalResult:
    fp = Fingerprint(
        device="cpu (Triton interpreter)",
        driver=None,
        cuda=None,
        torch="2.13.0",
        triton="3.9.0",
        python="3.11.7",
        hardware_model="nvidia-h200",
    )
    return EvalResult(
        verdict=Verdict.CORRECT,
        stage=Stage.DONE,
        timing_kind=TimingKind.MODELLED,
        input_sets=[InputSetResult("seed:0", [[4, 33]], ["float32"], True, 0.0, 0.0)],
        timings=[
            ShapeTiming(
                "seed:0",
                [[4, 33]],
                TimingKind.MODELLED,
                TimingStats(0.002, 0.002, 0.002, 0.002, 1),
                TimingStats(0.006, 0.006, 0.006, 0.006, 1),
            )
        ],
        fingerprint=fp,
    )


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """A history with one finished run: a rejected draft and a measured correct child."""
    path = tmp_path / "history.db"
    with History(path) as h:
        run_id = h.create_run(
            kind="evolve", problem_path=str(PROBLEM), problem_hash="h", signature="add_relu",
            strategy="greedy", config={}, device="NVIDIA H200", timing_kind="measured",
        )  # fmt: skip
        draft = h.add_candidate(run_id=run_id, parent_id=None, operator="template", source="x = 1\n")
        h.record_evaluation(
            draft,
            EvalResult(verdict=Verdict.REJECTED, stage=Stage.STATIC, reason="calls torch.add in forward"),
            0.0,
        )
        child = h.add_candidate(run_id=run_id, parent_id=draft, operator="tune", source=CANDIDATE.read_text())
        h.record_evaluation(child, measured_result(), 1.6)
        h.finish_run(run_id, status="finished", reason="max steps", best_candidate_id=child)
    return path


def test_version_and_help_list_every_discovered_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(["--version"])
    assert exc.value.code == 0
    assert re.fullmatch(r"kernelevolve \S+\n", capsys.readouterr().out)
    parser = cli.build_parser()
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert {"eval", "history", "show"} <= set(subparsers.choices)


def test_every_subcommand_gets_db_and_json(tmp_path: Path) -> None:
    parser = cli.build_parser()
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, sub in subparsers.choices.items():
        options = {s for action in sub._actions for s in action.option_strings}
        assert {"--db", "--json"} <= options, name
    args = parser.parse_args(["history", "--db", str(tmp_path / "x.db"), "--json"])
    assert cli.db_path(args) == tmp_path / "x.db" and cli.wants_json(args)


def test_default_db_is_under_the_current_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    args = cli.build_parser().parse_args(["history"])
    assert cli.db_path(args) == tmp_path / ".kernelevolve" / "history.db"


def test_a_command_module_that_fails_to_import_does_not_break_the_others(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    real = cli.command_modules()
    monkeypatch.setattr(
        cli, "command_modules", lambda: [*real, ("broken", ImportError("no module named 'x'"))]
    )
    assert cli.main(["broken", "anything"]) == 1
    err = capsys.readouterr().err
    assert err.strip() == (
        "kernelevolve: error: command 'broken' is unavailable in this installation: ImportError: no module named 'x'"
    )
    assert cli.main(["history", "--db", str(tmp_path / "none.db")]) == 0


def test_no_command_prints_usage_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main([]) == 2
    assert "usage: kernelevolve" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("problem", "candidate", "message"),
    [
        ("missing.py", str(CANDIDATE), r"problem file not found: .*missing\.py"),
        (str(PROBLEM), "missing.py", r"candidate file not found: .*missing\.py"),
        (
            str(DATA / "problem_no_inputs.py"),
            str(CANDIDATE),
            r"problem_no_inputs\.py: problem file lacks get_inputs",
        ),
        (
            str(PROBLEM),
            str(DATA / "candidate_no_modelnew.py"),
            r"candidate_no_modelnew\.py: .*lacks class ModelNew",
        ),
        (str(DATA), str(CANDIDATE), r"problem path is not a file"),
    ],
)
def test_eval_rejects_bad_files_with_one_line_and_exit_2(
    tmp_path: Path, problem: str, candidate: str, message: str
) -> None:
    db = tmp_path / "h.db"
    proc = run_cli("eval", problem, candidate, "--json", "--db", str(db), cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert re.search(message, lines[0]), lines[0]
    assert not db.exists()  # nothing recorded for input that was never evaluated


def test_eval_names_the_line_of_a_syntax_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "cand.py"
    bad.write_text('"""doc"""\n\n\nclass ModelNew:\n    def forward(self, x y):\n        return x\n')
    assert cli.main(["eval", str(PROBLEM), str(bad), "--db", str(tmp_path / "h.db")]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert re.fullmatch(r"kernelevolve: error: .*cand\.py:5: syntax error: .*\n", captured.err)


def test_eval_rejects_a_non_positive_timeout(tmp_path: Path) -> None:
    proc = run_cli("eval", str(PROBLEM), str(CANDIDATE), "--timeout", "0", "--db", str(tmp_path / "h.db"))
    assert proc.returncode == 2
    assert "must be more than 0 seconds" in proc.stderr


def test_history_without_a_database_says_so_and_creates_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / ".kernelevolve" / "history.db"
    assert cli.main(["history", "--db", str(db)]) == 0
    assert "no runs yet" in capsys.readouterr().out
    assert cli.main(["history", "--db", str(db), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"db": str(db), "runs": []}
    assert not db.parent.exists()


def test_history_json_lists_runs_with_counts_and_best(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["history", "--db", str(db), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    (run,) = data["runs"]
    assert run["status"] == "finished" and run["kind"] == "evolve"
    assert run["candidates"] == {"total": 2, "evaluated": 2, "correct": 1}
    assert run["best"]["candidate_id"] == 2
    assert run["best"]["speedup"] == pytest.approx(1.6)  # best baseline compile 0.8 ms / 0.5 ms
    assert run["best"]["timing"] == "measured"


def test_history_of_one_run_lists_its_candidates(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["history", "--db", str(db), "--run", "1", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["run"]["id"] == 1
    assert [(c["candidate_id"], c["verdict"], c["stage"]) for c in data["candidates"]] == [
        (1, "rejected", "static"),
        (2, "correct", "done"),
    ]
    assert data["candidates"][0]["reason"] == "calls torch.add in forward"
    assert cli.main(["history", "--db", str(db), "--run", "1"]) == 0
    out = capsys.readouterr().out
    assert "calls torch.add in forward" in out and "template" in out and "tune" in out


def test_history_of_a_missing_run_exits_2(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["history", "--db", str(db), "--run", "99"]) == 2
    assert capsys.readouterr().err == f"kernelevolve: error: run 99 not found in {db}\n"


def test_history_plain_text_when_not_a_terminal(db: Path) -> None:
    proc = run_cli("history", "--db", str(db))
    assert proc.returncode == 0
    assert not ANSI.search(proc.stdout)
    assert not any(ch in proc.stdout for ch in "│┃━─")
    header = proc.stdout.splitlines()[1].split()
    assert header[:4] == ["run", "kind", "status", "problem"]
    assert "1.60x" in proc.stdout


def test_feature_modules_can_add_history_columns_and_sections(
    db: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(history_command, "RUN_COLUMNS", [])
    monkeypatch.setattr(history_command, "RUN_SECTIONS", [])
    history_command.register_run_column("llm $", lambda h, runs: {r.id: f"{r.id * 0.25:.2f}" for r in runs})
    history_command.register_run_section("LLM ledger", lambda h, run: [("calls", "3"), ("cost", "$0.25")])
    assert cli.main(["history", "--db", str(db), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["runs"][0]["llm $"] == "0.25"
    assert cli.main(["history", "--db", str(db)]) == 0
    assert "llm $" in capsys.readouterr().out
    assert cli.main(["history", "--db", str(db), "--run", "1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["LLM ledger"] == {"calls": "3", "cost": "$0.25"}


def test_show_json_holds_source_diff_metrics_and_fingerprint(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["show", "2", "--db", str(db), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["source"] == CANDIDATE.read_text()
    assert data["diff"].startswith("--- candidate 1\n+++ candidate 2\n")
    assert (data["verdict"], data["timing"], data["parent_id"], data["operator"]) == (
        "correct",
        "measured",
        1,
        "tune",
    )
    assert data["speedup"] == pytest.approx(1.6)
    assert data["speedup_vs_eager"] == pytest.approx(2.0)
    assert data["speedup_vs_compile"] == pytest.approx(1.6)
    assert data["roofline_fraction"] == pytest.approx(0.5)
    assert data["fingerprint"]["device"] == "NVIDIA H200" and data["fingerprint"]["cuda"] == "12.8"
    assert data["input_sets"][1]["max_abs_err"] is None  # NaN is not JSON: shown as null
    assert data["timings"][0]["eager_ms"] == 1.0


def test_show_plain_text_has_source_diff_and_metrics(db: Path) -> None:
    proc = run_cli("show", "2", "--db", str(db))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert not ANSI.search(out)
    for expected in [
        "verdict",
        "correct",
        "1.60x",
        "2.00x",
        "50.0% of the speed-of-light floor",
        "NVIDIA H200",
        "_add_relu_kernel",
    ]:
        assert expected in out, expected
    assert "--- diff against candidate 1 ---" in out and "+import triton" in out
    assert "MODELLED" not in out


def test_show_of_a_missing_id_exits_2_with_one_line(db: Path, tmp_path: Path) -> None:
    proc = run_cli("show", "42", "--db", str(db))
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == f"kernelevolve: error: candidate 42 not found in {db}\n"
    proc = run_cli("show", "1", "--db", str(tmp_path / "absent.db"))
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1
    proc = run_cli("show", "abc", "--db", str(db))
    assert proc.returncode == 2


def test_a_database_from_a_newer_kernelevolve_is_one_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "h.db"
    future = Migration(99, "from the future", lambda db: None)
    History(path, migrations=[*MIGRATIONS, future]).close()
    assert cli.main(["history", "--db", str(path)]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "schema version 99 (from the future)" in err


def test_modelled_timing_is_labelled_prominently(tmp_path: Path) -> None:
    with History(tmp_path / "h.db") as h:
        run_id = h.create_run(
            kind="eval", problem_path=str(PROBLEM), problem_hash="h", signature=None,
            strategy=None, config={}, device="cpu", timing_kind=None,
        )  # fmt: skip
        cid = h.add_candidate(run_id=run_id, parent_id=None, operator="user", source="s")
        h.record_evaluation(cid, modelled_result(), 3.0)
        record, run = h.get_candidate(cid), h.get_run(run_id)
    assert record is not None
    for terminal in (True, False):
        console = Console(record=True, force_terminal=terminal, width=120)
        render.render_evaluation(console, record, run)
        text = console.export_text()
        assert "MODELLED: no GPU measured this" in text
        assert "nvidia-h200 roofline" in text
        assert "3.00x (modelled)" in text
        assert "Timings (MODELLED estimate)" in text


def test_eval_flags_reach_the_evaluation_config() -> None:
    from kernelevolve.server.commands.eval import eval_config

    parser = cli.build_parser()
    args = parser.parse_args(
        ["eval", "p.py", "c.py", "--device", "cpu", "--max-autotune", "--timeout", "12.5"]
    )
    config = eval_config(args)
    assert (config.device, config.max_autotune_baseline, config.limits.timeout_s) == ("cpu", True, 12.5)
    default = eval_config(parser.parse_args(["eval", "p.py", "c.py"]))
    assert (default.device, default.max_autotune_baseline) == ("auto", False)
    assert default.limits.timeout_s > 0


def test_show_of_a_pending_candidate_says_it_was_not_evaluated(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "h.db"
    with History(path) as h:
        run_id = h.create_run(
            kind="evolve", problem_path=str(PROBLEM), problem_hash="h", signature=None,
            strategy="greedy", config={}, device="cpu", timing_kind=None,
        )  # fmt: skip
        h.add_candidate(run_id=run_id, parent_id=None, operator="template", source="print(1)\n")
    assert cli.main(["show", "1", "--db", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["status"], data["verdict"], data["speedup"], data["fingerprint"]) == (
        "pending",
        None,
        None,
        None,
    )
    assert cli.main(["show", "1", "--db", str(path)]) == 0
    out = capsys.readouterr().out
    assert "pending (not evaluated)" in out and "print(1)" in out


def test_show_source_prints_the_stored_kernel_byte_for_byte(db: Path, tmp_path: Path) -> None:
    proc = run_cli("show", "2", "--source", "--db", str(db))
    assert proc.returncode == 0
    assert proc.stdout == CANDIDATE.read_text()
    proc = run_cli("show", "2", "--diff", "--db", str(db))
    assert proc.stdout.startswith("--- candidate 1\n+++ candidate 2\n")


def test_history_run_events_are_listed_on_request(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with History(db) as h:
        h.add_event(1, "new_best", {"candidate_id": 2, "speedup": 1.6, "diff": "long text"})
    assert cli.main(["history", "--db", str(db), "--run", "1", "--events", "--json"]) == 0
    events = json.loads(capsys.readouterr().out)["events"]
    assert [(e["kind"], e["payload"]["candidate_id"]) for e in events] == [("new_best", 2)]
    assert cli.main(["history", "--db", str(db), "--run", "1", "--events"]) == 0
    out = capsys.readouterr().out
    assert "new_best" in out and '"speedup": 1.6' in out and "long text" not in out
    assert cli.main(["history", "--db", str(db), "--run", "1", "--json"]) == 0
    assert "events" not in json.loads(capsys.readouterr().out)
