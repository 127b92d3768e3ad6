"""textDocument/hover on an op's `class`/`def` line: its history from SQLite and the live job."""

from __future__ import annotations

from kernelevolve.server.lsp import history_view
from kernelevolve.server.lsp.jobs import registry
from kernelevolve.server.lsp.server import EvolveServer
from lsprotocol import types


async def hover(ls: EvolveServer, params: types.HoverParams) -> types.Hover | None:
    uri = params.text_document.uri
    line = params.position.line
    item = next((t for t in ls.targets(uri) if t.target.def_line == line), None)
    if item is None:
        return None
    jobs = registry(ls)
    job = next((j for p in item.problem_paths if (j := jobs.running_for(p)) is not None), None)
    records, ledger = await history_view.cached_history(ls, item)
    text = history_view.hover_markdown(ls, item, records, job, ledger)
    lines = ls.doc(uri).text.splitlines()
    line_text = lines[line] if line < len(lines) else ""
    return types.Hover(
        contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=text),
        range=types.Range(
            start=types.Position(line=line, character=0),
            end=types.Position(line=line, character=len(line_text)),
        ),
    )


def register(server: EvolveServer) -> None:
    server.feature(types.TEXT_DOCUMENT_HOVER)(hover)
