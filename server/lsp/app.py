"""Build the server and run it over stdio or TCP (``kernelevolve serve``)."""

from __future__ import annotations

import dataclasses
import logging
import os
import sys
from pathlib import Path

from kernelevolve.server.lsp.handlers import register_all
from kernelevolve.server.lsp.server import EvolveServer
from kernelevolve.server.redact import RedactSecrets


def build_server() -> EvolveServer:
    server = EvolveServer()
    register_all(server)
    return server


def configure_logging(log_file: Path | None, verbose: int) -> None:
    level = logging.WARNING - 10 * min(verbose, 2)
    handler: logging.Handler = (
        logging.FileHandler(log_file) if log_file else logging.StreamHandler(sys.stderr)
    )
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(RedactSecrets())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)


def serve(*, tcp: bool = False, host: str = "127.0.0.1", port: int = 2087, db: Path | None = None) -> None:
    server = build_server()
    if db is not None:  # `--db` is the default; a client's dbPath setting still wins
        server.settings = dataclasses.replace(server.settings, db_path=str(Path(db).expanduser().resolve()))
    if tcp:
        server.start_tcp(host, port)
        return
    # stdout belongs to the protocol: keep a private copy of fd 1 for LSP messages and point fd 1
    # (and sys.stdout) at stderr, so a stray print here or in a child process cannot corrupt it.
    protocol_out = os.fdopen(os.dup(sys.stdout.fileno()), "wb", buffering=0)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr
    server.start_io(sys.stdin.buffer, protocol_out)  # type: ignore[arg-type]
