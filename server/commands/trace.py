"""`kernelevolve trace SCRIPT [ARGS...]`: record the real inputs of the ops a program calls.

The program runs in a child process; what it passes to functions and module ``forward``s defined
in its folder is stored in history, where "Evolve kernel" in the editor finds it.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from kernelevolve.search.trace import TraceError, run_trace

DEFAULT_DB = ".kernelevolve/history.db"


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser(
        "trace",
        help="run a script and record the shapes, dtypes and value ranges of its ops' inputs",
        description=__doc__,
    )
    parser.add_argument("script", type=Path, help="the Python program to run")
    parser.add_argument("script_args", nargs=argparse.REMAINDER, help="arguments passed to the script")
    parser.add_argument("--root", type=Path, default=None, help="record functions defined under this folder")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds before the script is stopped")
    parser.set_defaults(func=run, handler=run)


def run(args: argparse.Namespace) -> int:
    from kernelevolve.search.history import History
    from kernelevolve.search.history_lsp import record_trace

    try:
        summary = run_trace(args.script, list(args.script_args or []), root=args.root, timeout_s=args.timeout)
    except TraceError as exc:
        print(f"kernelevolve trace: {exc}", file=sys.stderr)
        return 2
    db_path = Path(args.db).expanduser() if getattr(args, "db", None) else Path.cwd() / DEFAULT_DB
    with History(db_path) as history:
        stored = record_trace(history, trace_id=summary.trace_id, script=summary.script, calls=summary.calls)
    if getattr(args, "json", False):
        print(
            json.dumps(
                {
                    "trace_id": summary.trace_id,
                    "script": summary.script,
                    "returncode": summary.returncode,
                    "recorded": stored,
                    "calls": summary.calls,
                    "db": str(db_path),
                }
            )
        )
    else:
        print(f"recorded {stored} call(s) from {Path(summary.script).name} into {db_path}")
        for line in summary.describe():
            print(f"  {line}")
        if summary.returncode != 0:
            print(f"note: the script exited with status {summary.returncode}", file=sys.stderr)
            if summary.stderr_tail:
                print(summary.stderr_tail, file=sys.stderr)
    return 0 if stored or summary.returncode == 0 else 1
