"""`kernelevolve serve`: the language server (stdio by default; logs never go to stdout)."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tcp", action="store_true", help="listen on TCP instead of stdio")
    parser.add_argument(
        "--stdio",
        action="store_true",
        help="speak over stdin/stdout (the default; accepted for clients that pass it)",
    )
    parser.add_argument("--host", default="127.0.0.1", help="TCP address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=2087, help="TCP port (default 2087)")
    parser.add_argument("--log-file", type=Path, default=None, help="write logs here instead of stderr")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more logging (-vv: debug)")


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser("serve", help="run the language server (Evolve kernel in the editor)")
    add_arguments(parser)
    parser.set_defaults(func=run, handler=run)


def run(args: argparse.Namespace) -> int:
    from kernelevolve.server.lsp.app import configure_logging, serve

    configure_logging(args.log_file, args.verbose)
    serve(tcp=args.tcp, host=args.host, port=args.port, db=getattr(args, "db", None))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="kernelevolve serve", description=__doc__)
    add_arguments(parser)
    return run(parser.parse_args(argv))
