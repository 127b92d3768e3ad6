"""`kernelevolve report RUN`: write one self-contained HTML page about a search run.

The page holds the search tree coloured by verdict, a speedup-over-steps plot, and each
candidate's note, diff and failure reason; inline SVG, no scripts, no external files.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from kernelevolve.search.history import History
from kernelevolve.search.report import ReportError, render_report
from kernelevolve.server.cli import CommandError, db_path, wants_json


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser(
        "report",
        help="write an HTML report of a search run",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("run", type=int, help="run id (see `kernelevolve history`)")
    parser.add_argument("--out", type=Path, default=None, metavar="FILE", help="default: run-<RUN>.html")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    database = db_path(args)
    if not database.exists():
        raise CommandError(f"no history database at {database}")
    with History(database) as history:
        try:
            page = render_report(history, args.run)
        except ReportError as exc:
            raise CommandError(str(exc)) from None
    out = Path(args.out) if args.out is not None else Path(f"run-{args.run}.html")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(page, encoding="utf-8")
    except OSError as exc:
        raise CommandError(f"cannot write {out}: {exc}") from None
    if wants_json(args):
        print(json.dumps({"run_id": args.run, "path": str(out), "bytes": len(page.encode())}))
    else:
        print(f"wrote {out}")
    return 0
