"""The whole editor loop against the real server and the real engine, VS Code capabilities:
code action -> execute -> work-done progress -> kernelEvolve/candidate -> inlay hints -> hover ->
show diff -> apply (workspace/applyEdit) -> the run's kernel edited on disk is re-verified
(diagnostics, stale history, hint refresh); plus join, cancel and shutdown mid-search.

The workspace is a copy of the bundled example examples/fused_elementwise; the search starts from
its hand-written kernel (``seedPath``) with a two-step budget, so a correct candidate arrives on
this 2-core CPU in about a minute (modelled timing).
"""

from __future__ import annotations

import asyncio
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from kernelevolve.search.history import History
from lsp_harness import Start, open_doc, request_code_actions, vscode_with_inlay_hints
from lsprotocol import types
from pytest_lsp import LanguageClient

pytestmark = [pytest.mark.filterwarnings("error::pytest_lsp.LspSpecificationWarning"), pytest.mark.slow]

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "fused_elementwise"
SMALL = {"settings": {"maxSteps": 2, "draftSize": 1, "patience": 2, "parallel": 1, "timeBudgetS": 400}}


def workspace(tmp_path: Path) -> tuple[Path, int]:
    shutil.copy(EXAMPLE / "problem.py", tmp_path / "problem.py")
    shutil.copy(EXAMPLE / "candidate.py", tmp_path / "seed_kernel.py")
    lines = (tmp_path / "problem.py").read_text().splitlines()
    return tmp_path / "problem.py", next(i for i, t in enumerate(lines) if t.startswith("class Model"))


async def wait_until(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.1)


def notes(client: LanguageClient, method: str) -> list[Any]:
    return client.notifications.get(method, [])  # type: ignore[attr-defined,no-any-return]


async def evolve_action(client: LanguageClient, uri: str, line: int) -> types.CodeAction:
    actions = await request_code_actions(client, uri, line)
    assert actions is not None
    found = [a for a in actions if isinstance(a, types.CodeAction) and a.title.startswith("Evolve kernel")]
    assert len(found) == 1, [a.title for a in actions]
    return found[0]


async def execute(client: LanguageClient, command: types.Command, **extra: Any) -> Any:
    arguments = [{**dict(command.arguments[0]), **extra}] if command.arguments else [extra]
    return await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=command.command, arguments=arguments)
    )


async def test_evolve_streams_candidates_then_hints_hover_and_apply(
    start_server: Start, tmp_path: Path
) -> None:
    problem, model_line = workspace(tmp_path)
    client = await start_server(tmp_path, SMALL, vscode_with_inlay_hints())
    uri = open_doc(client, problem)

    action = await evolve_action(client, uri, model_line + 2)
    assert action.title == "Evolve kernel: Model" and action.command is not None
    started = await execute(client, action.command, seedPath="seed_kernel.py")
    assert started["joined"] is False and started["op"] == "Model"
    assert Path(started["problemPath"]) == problem.resolve()  # a problem file is used as it is
    again = await execute(client, action.command)
    assert again["joined"] is True and again["jobId"] == started["jobId"]

    await wait_until(lambda: notes(client, "kernelEvolve/runFinished"), 400, "the run to finish")
    finished = notes(client, "kernelEvolve/runFinished")[0]
    candidates = notes(client, "kernelEvolve/candidate")
    assert finished["status"] == "finished" and finished["evaluated"] == len(candidates) == 2
    first = candidates[0]
    for key in (
        "uri",
        "runId",
        "candidateId",
        "verdict",
        "speedup",
        "timing",
        "device",
        "diff",
        "stage",
        "reason",
    ):
        assert key in first, key
    assert first["uri"] == uri and first["runId"] == finished["runId"] and first["jobId"] == started["jobId"]
    assert first["verdict"] == "correct" and first["timing"] == "modelled" and first["device"] == "H200"
    assert first["diff"].startswith("---") and "+class ModelNew" in first["diff"]
    best = max((c for c in candidates if c["verdict"] == "correct"), key=lambda c: c["speedup"])
    assert finished["bestCandidateId"] == best["candidateId"]
    assert Path(finished["kernelPath"]).resolve() == (tmp_path / "problem_evolved.py").resolve()

    reports = client.progress_reports[started["token"]]
    assert isinstance(reports[0], types.WorkDoneProgressBegin) and reports[0].cancellable
    assert any(isinstance(r, types.WorkDoneProgressReport) for r in reports)
    assert isinstance(reports[-1], types.WorkDoneProgressEnd)

    hints = await client.text_document_inlay_hint_async(
        types.InlayHintParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(
                start=types.Position(line=0, character=0), end=types.Position(line=200, character=0)
            ),
        )
    )
    assert hints is not None and len(hints) == 1
    assert hints[0].position.line == model_line
    assert hints[0].label == f"≈{best['speedup']:.2f}× modelled H200"
    assert client.refreshes >= 1  # type: ignore[attr-defined]

    hover = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=model_line, character=7),
        )
    )
    assert hover is not None and isinstance(hover.contents, types.MarkupContent)
    text = hover.contents.value
    assert f"#{best['candidateId']}" in text and "modelled" in text and "H200" in text and "Per shape" in text

    history = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(
            command="kernelEvolve.showHistory", arguments=[{"uri": uri, "line": model_line}]
        )
    )
    top = history["entries"][0]
    assert history["op"] == "Model" and top["candidateId"] == best["candidateId"] and top["device"] == "H200"
    assert top["perShape"] and all(s["speedup"] > 0 for s in top["perShape"])

    titles = {a.title: a for a in await code_actions(client, uri, model_line)}
    apply_title = f"Apply best kernel ({best['speedup']:.2f}×, H200 modelled)"
    assert apply_title in titles and "Show best kernel diff" in titles
    diff = await execute(client, titles["Show best kernel diff"].command)  # type: ignore[arg-type]
    assert diff["candidateId"] == best["candidateId"]
    names = [Path(f["uri"]).name for f in diff["files"]]
    assert names == ["problem_evolved.py", "problem_dispatch.py"]
    assert "class ModelNew" in diff["files"][0]["newText"] and "class Dispatch" in diff["files"][1]["newText"]

    applied = await execute(client, titles[apply_title].command)  # type: ignore[arg-type]
    assert applied["applied"] is True and applied["candidateId"] == best["candidateId"]
    (edit,) = client.applied_edits  # type: ignore[attr-defined]
    changes = edit.edit.document_changes
    creates = [c for c in changes if isinstance(c, types.CreateFile)]
    texts = [c for c in changes if isinstance(c, types.TextDocumentEdit)]
    assert [Path(c.uri).name for c in creates] == names
    assert texts[1].edits[0].new_text == diff["files"][1]["newText"]

    # The run's kernel file is watched: edited on disk, it is re-verified in the background.
    kernel = Path(finished["kernelPath"])
    kernel_uri = kernel.resolve().as_uri()
    good = kernel.read_text()
    kernel.write_text(_break(good))
    await wait_until(lambda: client.diagnostics.get(kernel_uri), 200, "a diagnostic on the broken kernel")
    (diagnostic,) = client.diagnostics[kernel_uri]
    assert (
        diagnostic.severity == types.DiagnosticSeverity.Error
        and "rejected at correctness" in diagnostic.message
    )
    with History(tmp_path / ".kernelevolve" / "history.db") as history:
        record = history.get_candidate(best["candidateId"])
    assert record is not None and record.stale
    assert "problem_evolved.py changed on disk; re-verified rejected" in (record.stale_reason or "")
    hints = await client.text_document_inlay_hint_async(hint_params(uri))
    assert hints and str(hints[0].label).endswith("(stale)")

    refreshes = client.refreshes  # type: ignore[attr-defined]
    kernel.write_text(good + "\n# restored by hand\n")
    await wait_until(lambda: len(client.diagnostics[kernel_uri]) == 0, 200, "diagnostics to clear")
    assert client.refreshes > refreshes  # type: ignore[attr-defined]
    hints = await client.text_document_inlay_hint_async(hint_params(uri))
    assert hints and "modelled H200" in str(hints[0].label) and "stale" not in str(hints[0].label)


def hint_params(uri: str) -> types.InlayHintParams:
    return types.InlayHintParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=types.Range(
            start=types.Position(line=0, character=0), end=types.Position(line=200, character=0)
        ),
    )


def _break(source: str) -> str:
    """Make the example kernel compute the wrong thing: it forgets the residual."""
    assert "tl.store(out_ptr + offs, y + r, mask=mask)" in source
    return source.replace(
        "tl.store(out_ptr + offs, y + r, mask=mask)", "tl.store(out_ptr + offs, y, mask=mask)"
    )


async def code_actions(client: LanguageClient, uri: str, line: int) -> list[types.CodeAction]:
    actions = await request_code_actions(client, uri, line)
    return [a for a in actions or [] if isinstance(a, types.CodeAction)]


async def test_cancel_from_the_progress_token_stops_the_search(start_server: Start, tmp_path: Path) -> None:
    problem, model_line = workspace(tmp_path)
    client = await start_server(tmp_path, {"settings": {**SMALL["settings"], "maxSteps": 40, "patience": 40}})
    uri = open_doc(client, problem)
    action = await evolve_action(client, uri, model_line)
    assert action.command is not None
    started = await execute(client, action.command, seedPath="seed_kernel.py")
    await wait_until(lambda: client.progress_reports.get(started["token"]), 30, "progress to begin")
    client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token=started["token"]))
    await wait_until(lambda: notes(client, "kernelEvolve/runFinished"), 120, "the cancelled run to finish")
    finished = notes(client, "kernelEvolve/runFinished")[0]
    assert finished["status"] == "cancelled" and finished["evaluated"] < 40
    jobs = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="kernelEvolve.listJobs", arguments=[{}])
    )
    assert [j["status"] for j in jobs["jobs"]] == ["cancelled"]


async def test_shutdown_mid_search_cancels_and_exits(start_server: Start, tmp_path: Path) -> None:
    problem, model_line = workspace(tmp_path)
    client = await start_server(tmp_path, {"settings": {**SMALL["settings"], "maxSteps": 40, "patience": 40}})
    uri = open_doc(client, problem)
    action = await evolve_action(client, uri, model_line)
    assert action.command is not None
    started = await execute(client, action.command, seedPath="seed_kernel.py")
    await wait_until(lambda: client.progress_reports.get(started["token"]), 30, "progress to begin")
    t0 = time.monotonic()
    await client.shutdown_session()
    assert time.monotonic() - t0 < 30
    assert client._server is not None and client._server.returncode == 0
    reports = client.progress_reports[started["token"]]
    assert isinstance(reports[-1], types.WorkDoneProgressEnd)


USER_MODEL = """\
import torch
import torch.nn as nn


# kernelevolve: inputs=float32[8, 64], float32[64]
class ScaleBias(nn.Module):
    def forward(self, x, b):
        return torch.relu(x * 2.0 + b)
"""


async def test_user_module_with_no_settings_gets_a_first_correct_candidate(
    start_server: Start, tmp_path: Path
) -> None:
    """The default flow: an op in the user's own file, inputs from a comment, a client that sends
    no settings, no seed: the template library drafts, the harness proves it correct."""
    (tmp_path / "model.py").write_text(USER_MODEL)
    client = await start_server(tmp_path)
    uri = open_doc(client, tmp_path / "model.py")
    action = await evolve_action(client, uri, 7)
    assert action.title == "Evolve kernel: ScaleBias" and action.command is not None
    started = await execute(client, action.command)
    assert started["inputsFrom"] == "comment"
    problem = Path(started["problemPath"])
    assert problem == (tmp_path / ".kernelevolve" / "problems" / "model__ScaleBias.py").resolve()
    assert (tmp_path / "model.py").read_text() == USER_MODEL  # the user's file is never touched

    def first_correct() -> bool:
        return any(c["verdict"] == "correct" for c in notes(client, "kernelEvolve/candidate"))

    await wait_until(lambda: first_correct() or notes(client, "kernelEvolve/runFinished"), 300, "a candidate")
    assert first_correct(), notes(client, "kernelEvolve/candidate")
    await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="kernelEvolve.cancel", arguments=[{"uri": uri}])
    )
    await wait_until(lambda: notes(client, "kernelEvolve/runFinished"), 120, "the run to end")
    hints = await client.text_document_inlay_hint_async(
        types.InlayHintParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(
                start=types.Position(line=0, character=0), end=types.Position(line=20, character=0)
            ),
        )
    )
    assert hints and hints[0].position.line == 5 and "modelled H200" in str(hints[0].label)
