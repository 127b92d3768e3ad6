"""One module per LSP method family; each exposes ``register(server)``."""

from __future__ import annotations

from kernelevolve.server.lsp.handlers import code_action, execute_command, hover, inlay_hint, lifecycle
from kernelevolve.server.lsp.server import EvolveServer

MODULES = (lifecycle, code_action, execute_command, hover, inlay_hint)


def register_all(server: EvolveServer) -> None:
    for module in MODULES:
        module.register(server)
