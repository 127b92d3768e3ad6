"""`kernelevolve serve --tcp` speaks LSP on 127.0.0.1; stdio mode keeps stdout for the protocol."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_serve_over_tcp_answers_a_code_action(tmp_path: Path) -> None:
    (tmp_path / "model.py").write_text(
        "import torch\n\n\n# kernelevolve: inputs=float32[4]\nclass Neg(torch.nn.Module):\n"
        "    def forward(self, x):\n        return -x\n"
    )
    port = free_port()
    log = tmp_path / "server.log"
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kernelevolve.server.cli",
            "serve",
            "--tcp",
            "--port",
            str(port),
            "--log-file",
            str(log),
        ],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ},
    )
    client = LanguageClient("tcp-test", "1")
    try:
        for _ in range(100):
            try:
                await client.start_tcp("127.0.0.1", port)
                break
            except OSError:
                await asyncio.sleep(0.1)
        else:
            raise AssertionError("the server never listened")
        await client.initialize_async(
            types.InitializeParams(capabilities=types.ClientCapabilities(), root_uri=tmp_path.as_uri())
        )
        client.initialized(types.InitializedParams())
        uri = (tmp_path / "model.py").as_uri()
        client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(
                    uri=uri, language_id="python", version=1, text=(tmp_path / "model.py").read_text()
                )
            )
        )
        actions = await client.text_document_code_action_async(
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                range=types.Range(
                    start=types.Position(line=5, character=0), end=types.Position(line=5, character=0)
                ),
                context=types.CodeActionContext(diagnostics=[]),
            )
        )
        assert actions is not None and [a.title for a in actions] == ["Evolve kernel: Neg"]
        await client.shutdown_async(None)
        client.exit(None)
    finally:
        await client.stop()
        try:
            out, _ = server.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            out, _ = server.communicate()
    assert out == b""  # TCP mode writes nothing to stdout either
    assert log.exists()
