"""textDocument/codeAction: Evolve kernel, Apply best kernel, Show diff, Cancel.

Cheap by design: it derives the problem in memory (to say what is missing) and reads live state;
the search itself starts only when the command runs.
"""

from __future__ import annotations

from kernelevolve.search.spec_from_selection import SpecUnavailable
from kernelevolve.server.lsp.derive import derive_blocking
from kernelevolve.server.lsp.jobs import registry
from kernelevolve.server.lsp.protocol import APPLY_BEST, CANCEL, EVOLVE, SHOW_DIFF
from kernelevolve.server.lsp.server import EvolveServer
from lsprotocol import types

KIND = types.CodeActionKind.RefactorRewrite


async def code_action(ls: EvolveServer, params: types.CodeActionParams) -> list[types.CodeAction] | None:
    only = params.context.only
    if only and not any(KIND.value.startswith(k) or k == "" for k in only):
        return None
    uri = params.text_document.uri
    line = params.range.start.line
    info = ls.doc(uri)
    arguments = [{"uri": uri, "line": line}]
    actions: list[types.CodeAction] = []
    try:
        derived = await ls.in_io(lambda: derive_blocking(ls, info, line))
    except SpecUnavailable as exc:
        if ls.target_at(uri, line) is None and "inside an nn.Module" in str(exc):
            return None  # not on an op: offer nothing rather than noise
        evolve = types.CodeAction(title="Evolve kernel", kind=KIND)
        if ls.has_capability("text_document.code_action.disabled_support"):
            evolve.disabled = types.CodeActionDisabled(reason=str(exc))
        else:
            evolve.title = "Evolve kernel (inputs needed)"
            evolve.command = types.Command(title=evolve.title, command=EVOLVE, arguments=arguments)
        return [evolve]
    job = registry(ls).running_for(derived.path.resolve())
    title = f"Evolve kernel: {derived.target.qualname}" + (" (running: follow)" if job else "")
    actions.append(
        types.CodeAction(
            title=title,
            kind=KIND,
            command=types.Command(title=title, command=EVOLVE, arguments=arguments),
        )
    )
    item = ls.target_at(uri, line)
    best = ls.best_for(item) if item is not None else None
    if best is not None:
        apply_title = f"Apply best kernel ({best.short()})"
        actions.append(
            types.CodeAction(
                title=apply_title,
                kind=KIND,
                command=types.Command(title=apply_title, command=APPLY_BEST, arguments=arguments),
            )
        )
        diff_title = "Show best kernel diff"
        actions.append(
            types.CodeAction(
                title=diff_title,
                kind=KIND,
                command=types.Command(title=diff_title, command=SHOW_DIFF, arguments=arguments),
            )
        )
    if job is not None:
        cancel_title = f"Cancel kernel search ({job.evaluated} evaluated)"
        actions.append(
            types.CodeAction(
                title=cancel_title,
                kind=KIND,
                command=types.Command(title=cancel_title, command=CANCEL, arguments=[{"jobId": job.job_id}]),
            )
        )
    return actions


def register(server: EvolveServer) -> None:
    server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(code_action_kinds=[KIND]))(
        code_action
    )
