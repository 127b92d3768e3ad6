"""Settings come from workspace/configuration; clients without work-done progress get
kernelEvolve/progress notifications instead."""

from __future__ import annotations

import asyncio
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from lsp_harness import Start, line_range, open_doc
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
