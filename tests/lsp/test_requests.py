"""Requests that need no search: settings, code actions, bad input, untitled buffers, hover."""

from __future__ import annotations

import asyncio
import textwrap
from pathlib import Path

import pytest
from lsp_harness import Start, open_doc, request_code_actions
from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams

pytestmark = pytest.mark.filterwarnings("error::pytest_lsp.LspSpecificationWarning")

USER_MODEL = textwrap.dedent(
    """\
    import torch
    import torch.nn as nn


    class Scale(nn.Module):
        def forward(self, x):
            return x * 2.0


    # kernelevolve: inputs=float32[8, 16]
    class Shift(nn.Module):
        def forward(self, x):
            return x + 1.0
    """
)


async def wait_for(predicate, timeout: float = 10.0) -> None:  # type: ignore[no-untyped-def]
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.05)


async def test_bad_setting_is_reported_and_the_default_kept(start_server: Start, tmp_path: Path) -> None:
    client = await start_server(tmp_path, {"settings": {"maxSteps": "many", "strategy": "beam", "colour": 1}})
    await wait_for(lambda: len(client.messages) >= 2)
    text = " | ".join(m.message for m in client.messages)
    assert "kernelEvolve.maxSteps: expected an integer >= 1" in text and "using 8" in text
    assert "kernelEvolve.colour: unknown setting" in text
    assert all(m.type == types.MessageType.Warning for m in client.messages)


async def test_code_action_without_inputs_is_disabled_and_says_what_to_add(
    start_server: Start, tmp_path: Path
) -> None:
    path = tmp_path / "model.py"
    path.write_text(USER_MODEL)
    client = await start_server(tmp_path)
    uri = open_doc(client, path)
    actions = await request_code_actions(client, uri, 5)
    assert actions is not None and len(actions) == 1
    action = actions[0]
    assert isinstance(action, types.CodeAction) and action.disabled is not None
    assert "get_inputs()" in action.disabled.reason and "kernelevolve trace" in action.disabled.reason


async def test_code_action_with_comment_inputs_offers_evolve(start_server: Start, tmp_path: Path) -> None:
    path = tmp_path / "model.py"
    path.write_text(USER_MODEL)
    client = await start_server(tmp_path)
    uri = open_doc(client, path)
    actions = await request_code_actions(client, uri, 12)
    assert actions is not None
    titles = [a.title for a in actions]
    assert titles == ["Evolve kernel: Shift"]
    action = actions[0]
    assert isinstance(action, types.CodeAction) and action.command is not None
    assert action.command.command == "kernelEvolve.evolve"
    assert list(action.command.arguments or []) == [{"uri": uri, "line": 12}]


async def test_no_action_outside_any_op(start_server: Start, tmp_path: Path) -> None:
    path = tmp_path / "model.py"
    path.write_text(USER_MODEL)
    client = await start_server(tmp_path)
    uri = open_doc(client, path)
    actions = await request_code_actions(client, uri, 0)
    assert not actions


async def test_untitled_unsaved_buffer_gets_an_action(start_server: Start, tmp_path: Path) -> None:
    client = await start_server(tmp_path)
    uri = open_doc(client, tmp_path / "none.py", text=USER_MODEL, uri="untitled:Untitled-1")
    actions = await request_code_actions(client, uri, 11)
    assert actions is not None and [a.title for a in actions] == ["Evolve kernel: Shift"]


@pytest.mark.parametrize(
    "arguments",
    [["not an object"], [{"line": 3}], [{"uri": 5}], [{"uri": "file:///x.py", "line": -1}], [{}, {}]],
)
async def test_malformed_command_arguments_are_invalid_params(
    start_server: Start, tmp_path: Path, arguments: list[object]
) -> None:
    client = await start_server(tmp_path)
    with pytest.raises(JsonRpcInvalidParams):
        await client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="kernelEvolve.evolve", arguments=arguments)
        )


async def test_unknown_command_is_an_error(start_server: Start, tmp_path: Path) -> None:
    client = await start_server(tmp_path)
    with pytest.raises(JsonRpcException, match="not defined"):
        await client.workspace_execute_command_async(types.ExecuteCommandParams(command="kernelEvolve.nope"))


async def test_evolve_without_inputs_fails_with_the_advice(start_server: Start, tmp_path: Path) -> None:
    path = tmp_path / "model.py"
    path.write_text(USER_MODEL)
    client = await start_server(tmp_path)
    uri = open_doc(client, path)
    with pytest.raises(JsonRpcException, match="no inputs known for Scale"):
        await client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="kernelEvolve.evolve", arguments=[{"uri": uri, "line": 5}])
        )
    assert any("kernelevolve trace" in m.message for m in client.messages)


async def test_hover_on_an_op_without_history_invites_evolving(start_server: Start, tmp_path: Path) -> None:
    path = tmp_path / "model.py"
    path.write_text(USER_MODEL)
    client = await start_server(tmp_path)
    uri = open_doc(client, path)
    hover = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=10, character=8)
        )
    )
    assert hover is not None and isinstance(hover.contents, types.MarkupContent)
    assert "`Shift`" in hover.contents.value and "Evolve kernel" in hover.contents.value
    assert not (tmp_path / ".kernelevolve").exists()  # looking never creates state in the workspace
    elsewhere = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=11, character=8)
        )
    )
    assert elsewhere is None
