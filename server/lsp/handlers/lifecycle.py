"""initialize / initialized / shutdown / configuration / didOpen: state set-up and tear-down."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

from kernelevolve.server.lsp import history_view
from kernelevolve.server.lsp.jobs import cancel_all
from kernelevolve.server.lsp.server import EvolveServer
from kernelevolve.server.lsp.settings import SECTION, parse_settings
from lsprotocol import types
from pygls.uris import to_fs_path

logger = logging.getLogger(__name__)


async def initialize(ls: EvolveServer, params: types.InitializeParams) -> None:
    root_uri = params.root_uri
    if params.workspace_folders:
        root_uri = params.workspace_folders[0].uri
    root = to_fs_path(root_uri) if root_uri else params.root_path
    if root:
        ls.root = Path(root).resolve()
    parsed = parse_settings(params.initialization_options, ls.settings)
    ls.settings = parsed.settings
    ls.pending_messages = list(parsed.problems)


async def initialized(ls: EvolveServer, params: types.InitializedParams) -> None:
    ls.loop = asyncio.get_running_loop()
    for problem in ls.pending_messages:
        ls.show(f"kernelevolve: {problem}", types.MessageType.Warning)
    ls.pending_messages.clear()
    await pull_configuration(ls)
    if ls.settings.watch:
        from kernelevolve.server.lsp.watching import start_watching

        await start_watching(ls)


async def pull_configuration(ls: EvolveServer) -> None:
    if not ls.has_capability("workspace.configuration"):
        return
    try:
        result = await ls.workspace_configuration_async(
            types.ConfigurationParams(items=[types.ConfigurationItem(section=SECTION)])
        )
    except Exception as exc:
        logger.info("workspace/configuration failed: %s", exc)
        return
    raw: Any = result[0] if result else None
    if raw is None:
        return
    parsed = parse_settings(raw, ls.settings)
    ls.settings = parsed.settings
    for problem in parsed.problems:
        ls.show(f"kernelevolve: {problem}", types.MessageType.Warning)


async def did_change_configuration(ls: EvolveServer, params: types.DidChangeConfigurationParams) -> None:
    if ls.has_capability("workspace.configuration"):
        await pull_configuration(ls)
        return
    if params.settings:
        parsed = parse_settings(params.settings, ls.settings)
        ls.settings = parsed.settings
        for problem in parsed.problems:
            ls.show(f"kernelevolve: {problem}", types.MessageType.Warning)


async def did_open(ls: EvolveServer, params: types.DidOpenTextDocumentParams) -> None:
    """Load what history knows about the document's ops, so hints show without a search."""
    await history_view.load_best(ls, params.text_document.uri)


async def did_save(ls: EvolveServer, params: types.DidSaveTextDocumentParams) -> None:
    await history_view.load_best(ls, params.text_document.uri)


async def shutdown(ls: EvolveServer, *args: Any) -> None:
    await cancel_all(ls)
    if ls.watcher is not None:
        ls.watcher.stop()
    for task in list(ls.background):
        task.cancel()
    ls.close()


def register(server: EvolveServer) -> None:
    server.feature(types.INITIALIZE)(initialize)
    server.feature(types.INITIALIZED)(initialized)
    server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)(did_change_configuration)
    server.feature(types.TEXT_DOCUMENT_DID_OPEN)(did_open)
    server.feature(types.TEXT_DOCUMENT_DID_SAVE)(did_save)
    server.feature(types.SHUTDOWN)(shutdown)
