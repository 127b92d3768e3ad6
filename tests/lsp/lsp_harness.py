"""pytest-lsp harness: the REAL server in a subprocess, a client that claims VS Code's capabilities.

Test modules set ``LspSpecificationWarning`` as an error, so a message the declared client could
not accept fails the test.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest_asyncio
from lsprotocol import types
from lsprotocol.converters import get_converter
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities
from pytest_lsp.client import register_lsp_features


def fixed_converter() -> Any:
    """lsprotocol decodes a CodeAction that carries a `command` as a Command (lsp-notes §2)."""
    converter = get_converter()

    def code_action_or_command(obj: Any, _: type) -> types.Command | types.CodeAction:
        if isinstance(obj.get("command"), str):
            return converter.structure(obj, types.Command)
        return converter.structure(obj, types.CodeAction)

    converter.register_structure_hook(types.Command | types.CodeAction, code_action_or_command)  # type: ignore[arg-type]
    return converter


def make_client() -> LanguageClient:
    client = LanguageClient(converter_factory=fixed_converter)
    register_lsp_features(client)
    client.refreshes = 0  # type: ignore[attr-defined]
    client.applied_edits = []  # type: ignore[attr-defined]
    client.notifications = {}  # type: ignore[attr-defined]

    @client.feature(types.WORKSPACE_INLAY_HINT_REFRESH)
    def _refresh(params: None) -> None:
        client.refreshes += 1  # type: ignore[attr-defined]

    @client.feature(types.WORKSPACE_APPLY_EDIT)
    def _apply(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        client.applied_edits.append(params)  # type: ignore[attr-defined]
        return types.ApplyWorkspaceEditResult(applied=True)

    for method in ("kernelEvolve/candidate", "kernelEvolve/runFinished", "kernelEvolve/progress"):

        def record(params: Any, method: str = method) -> None:
            client.notifications.setdefault(method, []).append(params)  # type: ignore[attr-defined]

        client.feature(method)(record)
    return client


SERVER = [sys.executable, "-m", "kernelevolve.server.lsp"]
if os.environ.get("KERNELEVOLVE_LSP_LOG"):  # debugging aid: the server's log in a file
    SERVER += ["-vv", "--log-file", os.environ["KERNELEVOLVE_LSP_LOG"]]

Start = Callable[..., Awaitable[LanguageClient]]


@pytest_asyncio.fixture
async def start_server(tmp_path: Path) -> AsyncIterator[Start]:
    """Start the server for a workspace: ``await start_server(root, options, capabilities)``."""
    started: list[LanguageClient] = []

    async def start(
        root: Path,
        init_options: Any = None,
        capabilities: str | types.ClientCapabilities = "visual-studio-code",
        configuration: dict[str, Any] | None = None,
    ) -> LanguageClient:
        env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONUNBUFFERED": "1"}
        config = ClientServerConfig(server_command=SERVER, client_factory=make_client, server_env=env)
        client = await config.start()
        assert isinstance(client, LanguageClient)
        if configuration is not None:
            client.set_configuration(configuration)
        started.append(client)
        await client.initialize_session(
            types.InitializeParams(
                capabilities=client_capabilities(capabilities)
                if isinstance(capabilities, str)
                else capabilities,
                root_uri=root.as_uri(),
                workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name=root.name)],
                initialization_options=init_options,
            )
        )
        return client

    yield start
    for client in started:
        if client._server is not None and client._server.returncode is None:
            await client.shutdown_session()
        await client.stop()


def vscode_with_inlay_hints() -> types.ClientCapabilities:
    """VS Code 1.65's recorded capabilities plus LSP 3.17 inlay hints (VS Code has had them since 1.67)."""
    caps = client_capabilities("visual-studio-code")
    assert caps.workspace is not None and caps.text_document is not None
    caps.workspace.inlay_hint = types.InlayHintWorkspaceClientCapabilities(refresh_support=True)
    caps.text_document.inlay_hint = types.InlayHintClientCapabilities(dynamic_registration=False)
    return caps


def open_doc(client: LanguageClient, path: Path, text: str | None = None, uri: str | None = None) -> str:
    uri = uri or path.as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id="python", version=1, text=text if text is not None else path.read_text()
            )
        )
    )
    return uri


def line_range(line: int) -> types.Range:
    return types.Range(
        start=types.Position(line=line, character=0), end=types.Position(line=line, character=1)
    )


async def request_code_actions(
    client: LanguageClient, uri: str, line: int
) -> list[types.Command | types.CodeAction] | None:
    """textDocument/codeAction on one line of ``uri`` with no diagnostics."""
    return await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=line_range(line),
            context=types.CodeActionContext(diagnostics=[]),
        )
    )
