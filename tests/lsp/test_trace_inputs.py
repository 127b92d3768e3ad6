"""`kernelevolve trace` records an op's real inputs; the editor then offers Evolve on it."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from lsp_harness import Start, open_doc, request_code_actions
from lsprotocol import types

pytestmark = pytest.mark.filterwarnings("error::pytest_lsp.LspSpecificationWarning")

PROGRAM = textwrap.dedent(
    """\
    import torch
    import torch.nn as nn


    class Gate(nn.Module):
        def __init__(self, dim, eps=1e-5):
            super().__init__()
            self.scale = nn.Parameter(torch.ones(dim))
            self.eps = eps

        def forward(self, x, ids):
            return torch.sigmoid(x * self.scale) + ids[:, None] * self.eps


    if __name__ == "__main__":
        gate = Gate(24)
        for rows in (5, 7):
            out = gate(torch.rand(rows, 24) * 4 - 2, torch.randint(0, 9, (rows,)))
        print("trained", out.shape)
    """
)


def trace(tmp_path: Path) -> dict:  # type: ignore[type-arg]
    (tmp_path / "train.py").write_text(PROGRAM)
    proc = subprocess.run(
        [sys.executable, "-m", "kernelevolve.server.cli", "trace", "--json", "train.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "trained" in proc.stderr  # the program's own output never reaches our stdout
    return json.loads(proc.stdout)


def test_trace_records_shapes_dtypes_value_ranges_and_constructor(tmp_path: Path) -> None:
    result = trace(tmp_path)
    calls = {(c["qualname"], c["call_index"]): c["args"] for c in result["calls"]}
    assert set(calls) == {("Gate.__init__", 0), ("Gate.forward", 0), ("Gate.forward", 1)}
    x, ids = calls[("Gate.forward", 0)]
    assert (x["shape"], x["dtype"], ids["dtype"]) == ([5, 24], "float32", "int64")
    assert -2.0 <= x["min"] < x["max"] <= 2.0 and 0 <= ids["min"] <= ids["max"] <= 8
    assert calls[("Gate.__init__", 0)] == [
        {"kind": "value", "repr": "24"},
        {"kind": "value", "repr": "1e-05"},
    ]
    assert (tmp_path / ".kernelevolve" / "history.db").exists()


async def test_traced_op_gets_an_evolve_action_without_any_comment(
    start_server: Start, tmp_path: Path
) -> None:
    trace(tmp_path)
    client = await start_server(tmp_path)
    uri = open_doc(client, tmp_path / "train.py")
    actions = await request_code_actions(client, uri, 10)
    assert actions is not None and [a.title for a in actions] == ["Evolve kernel: Gate"]
    assert all(isinstance(a, types.CodeAction) and a.disabled is None for a in actions)
