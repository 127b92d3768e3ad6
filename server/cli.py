"""`kernelevolve`: the headless command line. The outside world scripts against it; keep it stable.

Each subcommand lives in ``kernelevolve/server/commands/<name>.py`` and exposes
``register(subparsers) -> None``, which adds its parser and sets ``handler`` (or ``func``) to a
``(args: argparse.Namespace) -> int`` callable. Modules are discovered with pkgutil, so a new
command is a new file; modules whose names start with ``_`` are helpers, not commands.

Every subcommand gets ``--db PATH`` and ``--json`` unless it defines them itself. Exit codes:
0 success (``eval``: whenever an evaluation happened, whatever its verdict), 1 internal error,
2 bad input (one line on stderr), 130 interrupted.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType

from kernelevolve.search.history import HistoryError
from kernelevolve.search.problem import ProblemError

PROG = "kernelevolve"
DEFAULT_DB = Path(".kernelevolve") / "history.db"
COMMANDS_PACKAGE = "kernelevolve.server.commands"

Handler = Callable[[argparse.Namespace], int]


class CommandError(Exception):
    """Bad input to a command: printed as one line on stderr, exit ``code`` (2 by default)."""

    def __init__(self, message: str, code: int = 2) -> None:
        super().__init__(message)
        self.code = code


def version() -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version("kernelevolve")
    except PackageNotFoundError:
        return "unknown"


def db_path(args: argparse.Namespace) -> Path:
    """The history database: ``--db``, else ``.kernelevolve/history.db`` under the current folder."""
    chosen = getattr(args, "db", None)
    return Path(chosen).expanduser() if chosen else Path.cwd() / DEFAULT_DB


def wants_json(args: argparse.Namespace) -> bool:
    return bool(getattr(args, "json", False))


def command_modules() -> list[tuple[str, ModuleType | BaseException]]:
    """Every command module, by name; a module that fails to import is kept as its exception."""
    package = importlib.import_module(COMMANDS_PACKAGE)
    found: list[tuple[str, ModuleType | BaseException]] = []
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
        if info.name.startswith("_"):
            continue
        try:
            found.append((info.name, importlib.import_module(f"{COMMANDS_PACKAGE}.{info.name}")))
        except Exception as exc:  # one broken command must not take the others down
            found.append((info.name, exc))
    return found


def add_common_options(parser: argparse.ArgumentParser) -> None:
    """``--db`` and ``--json``, unless the command already defined them."""
    defined = {s for action in parser._actions for s in action.option_strings}
    if "--db" not in defined:
        parser.add_argument(
            "--db", type=Path, default=None, metavar="PATH", help=f"history database (default ./{DEFAULT_DB})"
        )
    if "--json" not in defined:
        parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Agentic Triton kernel search: propose, prove correct, measure, keep.",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {version()}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module in command_modules():
        if isinstance(module, BaseException):
            _register_unavailable(subparsers, name, module)
            continue
        register = getattr(module, "register", None)
        if register is None:
            continue
        register(subparsers)
    seen: set[int] = set()
    for sub in subparsers.choices.values():
        if id(sub) not in seen:
            seen.add(id(sub))
            add_common_options(sub)
    return parser


def _register_unavailable(subparsers: argparse._SubParsersAction, name: str, error: BaseException) -> None:  # type: ignore[type-arg]
    reason = f"{type(error).__name__}: {error}"
    parser = subparsers.add_parser(name, help=f"(unavailable: {reason})", add_help=False)
    parser.add_argument("rest", nargs=argparse.REMAINDER)

    def unavailable(args: argparse.Namespace) -> int:
        raise CommandError(f"command {name!r} is unavailable in this installation: {reason}", code=1)

    parser.set_defaults(handler=unavailable)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(list(argv) if argv is not None else None)
    handler: Handler | None = getattr(args, "handler", None) or getattr(args, "func", None)
    if handler is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(handler(args) or 0)
    except CommandError as exc:
        return _fail(str(exc), exc.code)
    except (ProblemError, HistoryError) as exc:
        return _fail(str(exc), 2)
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `kernelevolve history | head`
        sys.stderr.close()
        return 0
    except Exception as exc:
        if os.environ.get("KERNELEVOLVE_DEBUG"):
            raise
        return _fail(
            f"internal error: {type(exc).__name__}: {exc} (KERNELEVOLVE_DEBUG=1 shows the traceback)", 1
        )


def _fail(message: str, code: int) -> int:
    print(f"{PROG}: error: {' '.join(message.split())}", file=sys.stderr)
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
