"""workspace/executeCommand: evolve, cancel, applyBest, showDiff, showHistory, listJobs.

Arguments are one JSON object (docs/editor.md); anything else is InvalidParams. Handlers return
at once; the search runs as a background job (server/lsp/jobs.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kernelevolve.search.history import CandidateRecord
from kernelevolve.search.spec_from_selection import SpecUnavailable, write_problem
from kernelevolve.server.lsp import history_view
from kernelevolve.server.lsp.apply import PlannedFile, plan_files, workspace_edit
from kernelevolve.server.lsp.derive import derive_blocking
from kernelevolve.server.lsp.handlers.args import line_of, one_object, opt_int, opt_str, req_str
from kernelevolve.server.lsp.jobs import registry, start_job
from kernelevolve.server.lsp.protocol import (
    APPLY_BEST,
    CANCEL,
    EVOLVE,
    LIST_JOBS,
    SHOW_DIFF,
    SHOW_HISTORY,
    RequestFailed,
)
from kernelevolve.server.lsp.server import EvolveServer
from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams


async def evolve(ls: EvolveServer, *args: Any) -> dict[str, Any]:
    obj = one_object(EVOLVE, args)
    uri = req_str(EVOLVE, obj, "uri")
    line = line_of(EVOLVE, obj)
    seed = opt_str(EVOLVE, obj, "seedPath")
    seed_path = (ls.root / seed).resolve() if seed is not None else None
    if seed_path is not None and not seed_path.is_file():
        raise JsonRpcInvalidParams(message=f"{EVOLVE}: seedPath {seed} is not a file")
    info = ls.doc(uri)
    if not info.text and (info.path is None or not info.path.exists()):
        raise RequestFailed(message=f"{uri} is neither open in the editor nor on disk")
    try:
        derived = await ls.in_io(lambda: derive_blocking(ls, info, line))
        path = await ls.in_io(lambda: write_problem(derived))
    except SpecUnavailable as exc:
        ls.show(f"kernelevolve: {exc}", types.MessageType.Warning)
        raise RequestFailed(message=str(exc)) from exc
    job, joined = start_job(
        ls, uri=uri, op=derived.target.qualname, problem_path=path.resolve(), seed_path=seed_path
    )
    if joined:
        ls.show(f"kernelevolve: {job.op} is already being evolved (job {job.job_id}); following that search")
    return {
        "jobId": job.job_id,
        "token": job.token,
        "problemPath": str(job.problem_path),
        "op": job.op,
        "inputsFrom": derived.inputs_from,
        "joined": joined,
    }


async def cancel(ls: EvolveServer, *args: Any) -> dict[str, Any]:
    obj = one_object(CANCEL, args, optional=True)
    cancelled = registry(ls).cancel(job_id=opt_str(CANCEL, obj, "jobId"), uri=opt_str(CANCEL, obj, "uri"))
    return {"cancelled": cancelled}


async def list_jobs(ls: EvolveServer, *args: Any) -> dict[str, Any]:
    one_object(LIST_JOBS, args, optional=True)
    watched = [str(p) for p in ls.watcher.watcher.watched()] if ls.watcher is not None else []
    return {"jobs": [job.summary() for job in registry(ls).jobs.values()], "watched": watched}


async def show_history(ls: EvolveServer, *args: Any) -> dict[str, Any]:
    obj = one_object(SHOW_HISTORY, args)
    uri = req_str(SHOW_HISTORY, obj, "uri")
    item = ls.target_at(uri, line_of(SHOW_HISTORY, obj))
    if item is None:
        raise RequestFailed(message=f"no op at that line of {uri}")
    records = await ls.in_io(lambda: history_view.records_for(ls, item))
    return {
        "op": item.target.qualname,
        "problemPath": str(item.problem_paths[-1]),
        "entries": history_view.history_entries(records, ls.settings.hardware),
    }


async def _planned(
    ls: EvolveServer, command: str, obj: dict[str, Any]
) -> tuple[CandidateRecord, list[PlannedFile]]:
    candidate_id = opt_int(command, obj, "candidateId")
    uri = opt_str(command, obj, "uri")
    if candidate_id is None and uri is None:
        raise types_invalid(command, "give uri (and line) or candidateId")
    item = ls.target_at(uri, line_of(command, obj)) if uri else None
    if candidate_id is None:
        if item is None:
            raise RequestFailed(message=f"no op at that line of {uri}")
        live = ls.best_for(item)
        candidate_id = live.candidate_id if live is not None else None
    chosen = candidate_id
    doc_path = ls.doc(uri).path if uri else None

    def plan() -> tuple[CandidateRecord, list[PlannedFile]]:
        history = ls.history()
        record = history.get_candidate(chosen) if chosen is not None else None
        if record is None and item is not None:
            fresh = [r for r in history_view.records_for(ls, item) if not r.stale]
            record = fresh[0] if fresh else None
        if record is None or record.verdict != "correct":
            raise RequestFailed(
                message="no correct kernel in history for this op yet: run Evolve kernel first"
            )
        run = history.get_run(record.run_id)
        problem = Path(run.problem_path) if run is not None else Path("problem.py")
        dest = doc_path.parent if doc_path is not None else problem.parent
        return record, plan_files(history, record, problem, dest)

    return await ls.in_io(plan)


def types_invalid(command: str, message: str) -> Exception:
    return JsonRpcInvalidParams(message=f"{command}: {message}")


async def show_diff(ls: EvolveServer, *args: Any) -> dict[str, Any]:
    obj = one_object(SHOW_DIFF, args)
    record, files = await _planned(ls, SHOW_DIFF, obj)
    return {
        "candidateId": record.id,
        "files": [{"uri": f.uri, "diff": f.diff(), "newText": f.text} for f in files],
    }


async def apply_best(ls: EvolveServer, *args: Any) -> dict[str, Any]:
    obj = one_object(APPLY_BEST, args)
    record, files = await _planned(ls, APPLY_BEST, obj)
    if not ls.has_capability("workspace.apply_edit"):
        raise RequestFailed(message="this client cannot apply workspace edits")
    resource_ops = getattr(
        getattr(getattr(ls.client_capabilities, "workspace", None), "workspace_edit", None),
        "resource_operations",
        None,
    )
    edit = workspace_edit(
        files,
        document_changes=ls.has_capability("workspace.workspace_edit.document_changes"),
        can_create=types.ResourceOperationKind.Create in (resource_ops or []),
    )
    result = await ls.workspace_apply_edit_async(
        types.ApplyWorkspaceEditParams(edit=edit, label=f"Apply evolved kernel #{record.id}")
    )
    if result.applied and ls.watcher is not None:
        for f in files:
            if f.path.name.endswith("_evolved.py"):
                run = await ls.in_io(lambda: ls.history().get_run(record.run_id))
                if run is not None:
                    ls.watcher.track(f.path, Path(run.problem_path), None, candidate_id=record.id)
    return {
        "applied": result.applied,
        "failureReason": result.failure_reason,
        "candidateId": record.id,
        "files": [f.uri for f in files],
    }


def register(server: EvolveServer) -> None:
    server.command(EVOLVE)(evolve)
    server.command(CANCEL)(cancel)
    server.command(LIST_JOBS)(list_jobs)
    server.command(SHOW_HISTORY)(show_history)
    server.command(SHOW_DIFF)(show_diff)
    server.command(APPLY_BEST)(apply_best)
