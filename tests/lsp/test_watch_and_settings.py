"""Kernel files changed on disk are re-verified in the background (diagnostics, hints, stale
history); settings come from workspace/configuration; clients without work-done progress get
kernelEvolve/progress notifications instead."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from kernelevolve.search.history import History
from lsp_harness import Start, line_range, open_doc, vscode_with_inlay_hints
from lsprotocol import types
from pytest_lsp import LanguageClient, client_capabilities

pytestmark = pytest.mark.filterwarnings("error::pytest_lsp.LspSpecificationWarning")
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "fused_elementwise"


async def wait_until(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.1)


async def list_jobs(client: LanguageClient) -> dict[str, Any]:
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="kernelEvolve.listJobs", arguments=[{}])
    )
    return dict(result)


@pytest.mark.slow
async def test_kernel_file_edited_on_disk_is_reverified_and_history_marked_stale(
    start_server: Start, tmp_path: Path
) -> None:
    shutil.copy(EXAMPLE / "problem.py", tmp_path / "problem.py")
    kernel = tmp_path / "problem_evolved.py"
    good = (EXAMPLE / "candidate.py").read_text()
    kernel.write_text(good)
    db = tmp_path / ".kernelevolve" / "history.db"
    evaluated = subprocess.run(
        [
            sys.executable,
            "-m",
            "kernelevolve.server.cli",
            "eval",
            "problem.py",
            kernel.name,
            "--json",
            "--db",
            str(db),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert evaluated.returncode == 0, evaluated.stderr
    candidate_id = json.loads(evaluated.stdout)["candidate_id"]

    client = await start_server(tmp_path, None, vscode_with_inlay_hints())
    uri = open_doc(client, tmp_path / "problem.py")

    async def watched() -> list[str]:
        return list((await list_jobs(client))["watched"])

    deadline = time.monotonic() + 30
    while str(kernel.resolve()) not in await watched():
        assert time.monotonic() < deadline, "the kernel file was never watched"
        await asyncio.sleep(0.2)

    kernel.write_text(_break(good))
    kernel_uri = kernel.resolve().as_uri()
    await wait_until(lambda: client.diagnostics.get(kernel_uri), 200, "a diagnostic on the broken kernel")
    (diagnostic,) = client.diagnostics[kernel_uri]
    assert (
        diagnostic.severity == types.DiagnosticSeverity.Error
        and "rejected at correctness" in diagnostic.message
    )

    with History(db) as history:
        record = history.get_candidate(candidate_id)
    assert (
        record is not None
        and record.stale
        and "problem_evolved.py changed on disk" in (record.stale_reason or "")
    )

    refreshes = client.refreshes  # type: ignore[attr-defined]
    kernel.write_text(good + "\n# restored\n")
    await wait_until(lambda: len(client.diagnostics[kernel_uri]) == 0, 200, "diagnostics to clear")
    assert client.refreshes > refreshes  # type: ignore[attr-defined]
    problem_line = next(
        i
        for i, t in enumerate((tmp_path / "problem.py").read_text().splitlines())
        if t.startswith("class Model")
    )
    hints = await client.text_document_inlay_hint_async(
        types.InlayHintParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(
                start=types.Position(line=0, character=0), end=types.Position(line=100, character=0)
            ),
        )
    )
    assert hints and hints[0].position.line == problem_line and "modelled H200" in str(hints[0].label)


def _break(source: str) -> str:
    """Make the kernel compute the wrong thing: it forgets the residual."""
    assert "tl.store(out_ptr + offs, y + r, mask=mask)" in source
    return source.replace(
        "tl.store(out_ptr + offs, y + r, mask=mask)", "tl.store(out_ptr + offs, y, mask=mask)"
    )


async def test_settings_from_workspace_configuration_apply_to_the_next_search(
    start_server: Start, tmp_path: Path
) -> None:
    shutil.copy(EXAMPLE / "problem.py", tmp_path / "problem.py")
    client = await start_server(
        tmp_path,
        None,
        "visual-studio-code",
        configuration={"kernelEvolve": {"maxSteps": 3, "strategy": "dfs"}},
    )
    await wait_until(lambda: client.messages, 20, "the bad strategy to be reported")
    assert "kernelEvolve.strategy: expected one of greedy, beam, mcts, evolve" in client.messages[0].message
    uri = open_doc(client, tmp_path / "problem.py")
    started = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="kernelEvolve.evolve", arguments=[{"uri": uri, "line": 14}])
    )
    await wait_until(lambda: client.progress_reports.get(started["token"]), 30, "progress to begin")
    begin = client.progress_reports[started["token"]][0]
    assert isinstance(begin, types.WorkDoneProgressBegin) and begin.message == "greedy, up to 3 steps"
    cancelled = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="kernelEvolve.cancel", arguments=[{"jobId": started["jobId"]}])
    )
    assert cancelled == {"cancelled": [started["jobId"]]}
    await wait_until(lambda: client.notifications.get("kernelEvolve/runFinished"), 120, "the run to end")  # type: ignore[attr-defined]
    assert client.notifications["kernelEvolve/runFinished"][0]["status"] == "cancelled"  # type: ignore[attr-defined]


async def test_client_without_work_done_progress_gets_progress_notifications(
    start_server: Start, tmp_path: Path
) -> None:
    shutil.copy(EXAMPLE / "problem.py", tmp_path / "problem.py")
    caps = client_capabilities("visual-studio-code")
    caps.window = types.WindowClientCapabilities(work_done_progress=False)
    client = await start_server(tmp_path, {"maxSteps": 2}, caps)
    uri = open_doc(client, tmp_path / "problem.py")
    started = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(
            command="kernelEvolve.evolve", arguments=[{"uri": uri, "range": line_range(14)}]
        )
    )
    progress = client.notifications  # type: ignore[attr-defined]
    await wait_until(lambda: progress.get("kernelEvolve/progress"), 30, "a progress notification")
    await client.workspace_execute_command_async(types.ExecuteCommandParams(command="kernelEvolve.cancel"))
    await wait_until(lambda: progress.get("kernelEvolve/runFinished"), 120, "the run to end")
    kinds = [p["kind"] for p in progress["kernelEvolve/progress"]]
    assert kinds[0] == "begin" and kinds[-1] == "end"
    assert {p["token"] for p in progress["kernelEvolve/progress"]} == {started["token"]}
    assert progress["kernelEvolve/progress"][0]["message"] == "greedy, up to 2 steps"
    assert started["token"] not in client.progress_reports
