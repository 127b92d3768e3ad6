"""`kernelevolve show ID`: one candidate's verdict, metrics, input sets, fingerprint, source, diff.

`--source` prints the stored source alone (to get a kernel back into a file), `--diff` the diff.
"""

from __future__ import annotations

import argparse
import sys

from kernelevolve.search.history import History
from kernelevolve.server import render
from kernelevolve.server.cli import CommandError, db_path, wants_json


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser(
        "show",
        help="show one candidate: source, diff, metrics, fingerprint, input-set results",
        description=__doc__,
    )
    parser.add_argument("id", type=int, metavar="ID", help="candidate id (as printed by eval, history)")
    raw = parser.add_mutually_exclusive_group()
    raw.add_argument("--source", action="store_true", help="print only the candidate's source, as stored")
    raw.add_argument("--diff", action="store_true", help="print only the unified diff against its parent")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    path = db_path(args)
    if not path.exists():
        raise CommandError(f"candidate {args.id} not found: no history database at {path}")
    with History(path) as history:
        candidate = history.get_candidate(args.id)
        if candidate is None:
            raise CommandError(f"candidate {args.id} not found in {path}")
        run_record = history.get_run(candidate.run_id)
    if args.source or args.diff:  # raw text, e.g. `kernelevolve show 7 --source > kernel.py`
        sys.stdout.write(candidate.source if args.source else candidate.diff)
        return 0
    if wants_json(args):
        print(render.dumps(render.candidate_detail(candidate, run_record)))
    else:
        render.render_candidate(render.stdout_console(), candidate, run_record)
    return 0
