"""textDocument/inlayHint: the best speedup so far at the end of each op's `class`/`def` line."""

from __future__ import annotations

from kernelevolve.server.lsp.jobs import registry
from kernelevolve.server.lsp.server import EvolveServer
from lsprotocol import types


async def inlay_hint(ls: EvolveServer, params: types.InlayHintParams) -> list[types.InlayHint]:
    hints: list[types.InlayHint] = []
    first, last = params.range.start.line, params.range.end.line
    jobs = registry(ls)
    for item in ls.targets(params.text_document.uri):
        target = item.target
        if not first <= target.def_line <= last:
            continue
        best = ls.best_for(item)
        job = next((j for p in item.problem_paths if (j := jobs.running_for(p)) is not None), None)
        if best is not None:
            label = best.label() + (" …" if job is not None else "")
            tooltip = f"candidate #{best.candidate_id}" + (f", run {best.run_id}" if best.run_id else "")
        elif job is not None:
            label, tooltip = (
                f"⏳ evolving ({job.evaluated}/{job.config.max_steps})",
                "no correct candidate yet",
            )
        else:
            continue
        hints.append(
            types.InlayHint(
                position=types.Position(line=target.def_line, character=target.def_line_end_col),
                label=label,
                padding_left=True,
                tooltip=tooltip,
            )
        )
    return hints


def register(server: EvolveServer) -> None:
    server.feature(types.TEXT_DOCUMENT_INLAY_HINT, types.InlayHintOptions(resolve_provider=False))(inlay_hint)
