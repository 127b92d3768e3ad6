"""`kernelevolve kb search|show|list|remove|learn`: the knowledge base from the command line.

- ``kb search QUERY [--platform P] [--kind K] [--phase PH] [--limit N]``: what the LLM operator
  would retrieve for that query and filters (built-in, workspace and learned documents).
- ``kb show ID``: one document (``guidance/gemm``, ``learned/3``...).
- ``kb list``: learned entries with provenance; ``kb remove ID`` deletes one.
- ``kb learn RUN``: distil a run's best candidate into an entry (only measured wins qualify).

Importing this module also adds the LLM ledger to `kernelevolve history`: an ``llm $`` column in
the runs table and an "LLM ledger" section under ``history --run N``.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kernelevolve.knowledge.kb import KINDS, PHASES, PLATFORMS, KnowledgeBase, KnowledgeError
from kernelevolve.search.history import History, HistoryError, RunRecord
from kernelevolve.server import render
from kernelevolve.server.cli import CommandError, db_path, wants_json


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser(
        "kb",
        help="search and manage the knowledge base",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = parser.add_subparsers(dest="kb_action", metavar="ACTION", required=True)
    search = actions.add_parser("search", help="show what retrieval returns for a query")
    search.add_argument("query", nargs="+", help="words to search for")
    search.add_argument("--platform", choices=PLATFORMS, default=None)
    search.add_argument("--kind", choices=KINDS, default=None, help="bottleneck kind")
    search.add_argument("--phase", choices=PHASES, default=None)
    search.add_argument("--limit", type=int, default=5)
    show = actions.add_parser("show", help="print one document")
    show.add_argument("id")
    actions.add_parser("list", help="list learned entries")
    remove = actions.add_parser("remove", help="delete a learned entry")
    remove.add_argument("id", help="entry id (3 or learned/3)")
    learn = actions.add_parser("learn", help="distil a run's best candidate (measured wins only)")
    learn.add_argument("run", type=int)
    for sub in (search, show, actions.choices["list"], remove, learn):
        sub.add_argument("--db", type=Path, default=None, metavar="PATH", help="history database")
        sub.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    action = args.kb_action
    if action in ("search", "show"):
        return _search_or_show(args)
    path = db_path(args)
    if not path.exists():
        if action == "list":
            return _emit(
                args, {"db": str(path), "entries": []}, f"no learned entries: no history database at {path}"
            )
        raise CommandError(f"no history database at {path}")
    with History(path) as history:
        if action == "list":
            return _list(history, args)
        if action == "remove":
            return _remove(history, args)
        return _learn(history, args)


def _knowledge_base(args: argparse.Namespace) -> KnowledgeBase:
    from kernelevolve.knowledge.learning import learned_documents

    learned = []
    path = db_path(args)
    if path.exists():
        with History(path) as history:
            learned = learned_documents(history)
    return KnowledgeBase(workspace=Path.cwd(), learned=learned)


def _search_or_show(args: argparse.Namespace) -> int:
    try:
        kb = _knowledge_base(args)
    except KnowledgeError as exc:
        raise CommandError(str(exc)) from None
    if args.kb_action == "show":
        doc = kb.get(args.id)
        if doc is None:
            raise CommandError(f"no knowledge document {args.id!r} (try `kernelevolve kb search`)")
        data = doc.__dict__
        return _emit(args, data, f"{doc.id} — {doc.title}\n{doc.path}\n\n{doc.body}")
    query = " ".join(args.query)
    hits = kb.search(query, platform=args.platform, kind=args.kind, phase=args.phase, limit=args.limit)
    if wants_json(args):
        rows = [
            {
                "id": h.document.id,
                "title": h.document.title,
                "source": h.document.source,
                "path": h.document.path,
                "score": h.score,
                "platforms": h.document.platforms,
                "kinds": h.document.kinds,
                "phases": h.document.phases,
                "snippet": h.snippet,
            }
            for h in hits
        ]
        print(render.dumps({"query": query, "results": rows}))
        return 0
    console = render.stdout_console()
    if not hits:
        console.print(f"nothing matches {query!r} with these filters", markup=False)
        return 0
    table = render.Table(
        title=f"knowledge for {query!r}", columns=["score", "id", "title", "platforms", "kinds", "phases"]
    )
    table.right_aligned = {0}
    table.flexible = {2}
    table.optional = [5, 4, 3]
    for h in hits:
        d = h.document
        table.rows.append(
            [f"{h.score:.2f}", d.id, d.title, ",".join(d.platforms), ",".join(d.kinds), ",".join(d.phases)]
        )
    render.print_table(console, table)
    return 0


def _list(history: History, args: argparse.Namespace) -> int:
    from kernelevolve.search import history_llm

    entries = history_llm.list_entries(history)
    if wants_json(args):
        print(render.dumps({"db": str(history.path), "entries": [e.__dict__ for e in entries]}))
        return 0
    console = render.stdout_console()
    if not entries:
        console.print(f"no learned entries in {history.path}", markup=False)
        return 0
    table = render.Table(
        title="learned knowledge entries", columns=["id", "title", "speedup", "run", "candidate", "created"]
    )
    table.right_aligned = {0, 2}
    table.flexible = {1}
    for e in entries:
        device = (e.fingerprint or {}).get("device", "?")
        table.rows.append(
            [
                f"learned/{e.id}",
                e.title,
                f"{render.fmt_speedup(e.speedup)} {e.timing_kind or ''} {device}".strip(),
                str(e.run_id or render.DASH),
                str(e.candidate_id or render.DASH),
                e.created_at,
            ]
        )
    render.print_table(console, table)
    return 0


def _entry_id(text: str) -> int:
    try:
        return int(text.removeprefix("learned/"))
    except ValueError:
        raise CommandError(f"not a learned entry id: {text!r} (expected a number or learned/N)") from None


def _remove(history: History, args: argparse.Namespace) -> int:
    from kernelevolve.search import history_llm

    entry_id = _entry_id(args.id)
    try:
        history_llm.remove_entry(history, entry_id)
    except HistoryError as exc:
        raise CommandError(str(exc)) from None
    return _emit(args, {"removed": entry_id}, f"removed learned/{entry_id}")


def _learn(history: History, args: argparse.Namespace) -> int:
    from kernelevolve.knowledge.learning import learn_from_run

    if history.get_run(args.run) is None:
        raise CommandError(f"run {args.run} not found in {history.path}")
    ids = learn_from_run(history, args.run)
    message = (
        f"learned/{ids[0]} holds run {args.run}'s best candidate"
        if ids
        else f"run {args.run} has no measured win to learn from (modelled or slower results are not knowledge)"
    )
    return _emit(args, {"run_id": args.run, "entries": ids}, message)


def _emit(args: argparse.Namespace, data: dict[str, Any], text: str) -> int:
    if wants_json(args):
        print(render.dumps(data))
    else:
        render.stdout_console().print(text, markup=False)
    return 0


# -- the LLM ledger in `kernelevolve history` ---------------------------------------------------------


def _ledger_column(history: History, runs: Sequence[RunRecord]) -> dict[int, Any]:
    from kernelevolve.search import history_llm

    values: dict[int, Any] = {}
    for r in runs:
        spend = history_llm.run_spend(history, r.id)
        if spend.calls:
            values[r.id] = f"${spend.cost_usd:.4f}" + ("*" if spend.price_estimated else "")
    return values


def _ledger_section(history: History, run: RunRecord) -> list[tuple[str, str]] | None:
    from kernelevolve.search import history_llm

    summary = history_llm.ledger_summary(history, run.id)
    if not summary:
        return None
    fields = [("total", summary)]
    for c in history_llm.list_calls(history, run.id):
        tokens = f"{c['input_tokens']} in / {c['output_tokens']} out"
        if c["cache_read_input_tokens"]:
            tokens += f" / {c['cache_read_input_tokens']} cached"
        error = f" — {c['error']}" if c["error"] else ""
        fields.append(
            (
                f"call {c['id']}",
                f"{c['status']} {c['model']} {tokens}, ${c['cost_usd']:.4f}, {c['latency_s']:.1f} s{error}",
            )
        )
    episodes = history_llm.list_episodes(history, run.id)
    if episodes:
        outcomes: dict[str, int] = {}
        for e in episodes:
            outcomes[e["outcome"]] = outcomes.get(e["outcome"], 0) + 1
        fields.append(("episodes", ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items()))))
    return fields


def _register_history_ledger() -> None:
    try:
        from kernelevolve.server.commands.history import register_run_column, register_run_section
    except ImportError:  # the history command is not installed: nothing to extend
        return
    register_run_column("llm $", _ledger_column)
    register_run_section("LLM ledger", _ledger_section)


_register_history_ledger()
