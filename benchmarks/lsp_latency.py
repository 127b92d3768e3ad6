"""Latency of hover, codeAction and inlayHint while a search with candidates in flight runs.

Starts the real server (``python -m kernelevolve.server.lsp``) on a scratch copy of a bundled
example, launches a search from its hand-written kernel, and once the first candidate has been
evaluated times the three requests round-robin until the search ends (or ``--requests`` per
method). Also times them idle, before the search, for comparison. Prints p50/p99/max in ms; it
asserts nothing (target: p99 < 50 ms).

    .venv/bin/python benchmarks/lsp_latency.py [--example fused_elementwise] [--max-steps 6]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.client import LanguageClient

ROOT = Path(__file__).resolve().parents[1]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


class Probe:
    def __init__(self, client: LanguageClient, uri: str, line: int) -> None:
        self.client = client
        self.doc = types.TextDocumentIdentifier(uri=uri)
        self.line = line
        self.samples: dict[str, list[float]] = {"hover": [], "codeAction": [], "inlayHint": []}

    def requests(self) -> dict[str, Callable[[], Awaitable[Any]]]:
        here = types.Position(line=self.line, character=7)
        whole = types.Range(
            start=types.Position(line=0, character=0), end=types.Position(line=200, character=0)
        )
        return {
            "hover": lambda: self.client.text_document_hover_async(
                types.HoverParams(text_document=self.doc, position=here)
            ),
            "codeAction": lambda: self.client.text_document_code_action_async(
                types.CodeActionParams(
                    text_document=self.doc,
                    range=types.Range(start=here, end=here),
                    context=types.CodeActionContext(diagnostics=[]),
                )
            ),
            "inlayHint": lambda: self.client.text_document_inlay_hint_async(
                types.InlayHintParams(text_document=self.doc, range=whole)
            ),
        }

    async def round(self) -> None:
        for name, call in self.requests().items():
            t0 = time.perf_counter()
            await call()
            self.samples[name].append((time.perf_counter() - t0) * 1000)


def _hover_text(hover: Any) -> str:
    contents = getattr(hover, "contents", None)
    return str(getattr(contents, "value", contents or ""))


def summary(samples: dict[str, list[float]]) -> dict[str, dict[str, float]]:
    return {
        name: {
            "n": len(v),
            "p50_ms": statistics.median(v),
            "p99_ms": percentile(v, 99),
            "max_ms": max(v),
        }
        for name, v in samples.items()
        if v
    }


async def run(example: str, max_steps: int, per_method: int, pause_s: float) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="kernelevolve-latency-"))
    shutil.copy(ROOT / "examples" / example / "problem.py", work / "problem.py")
    shutil.copy(ROOT / "examples" / example / "candidate.py", work / "seed_kernel.py")
    text = (work / "problem.py").read_text()
    line = next(i for i, t in enumerate(text.splitlines()) if t.startswith("class Model"))
    client = LanguageClient("lsp-latency", "1")
    seen: dict[str, list[Any]] = {"candidate": [], "finished": []}
    client.feature("kernelEvolve/candidate")(lambda params: seen["candidate"].append(params))
    client.feature("kernelEvolve/runFinished")(lambda params: seen["finished"].append(params))
    client.feature("kernelEvolve/progress")(lambda params: None)
    client.feature(types.WINDOW_SHOW_MESSAGE)(lambda params: None)
    client.feature(types.WINDOW_LOG_MESSAGE)(lambda params: None)
    await client.start_io(sys.executable, "-m", "kernelevolve.server.lsp", env=dict(os.environ))
    caps = types.ClientCapabilities(
        text_document=types.TextDocumentClientCapabilities(inlay_hint=types.InlayHintClientCapabilities())
    )
    settings = {"maxSteps": max_steps, "draftSize": 1, "patience": max_steps, "parallel": 1}
    await client.initialize_async(
        types.InitializeParams(
            capabilities=caps, root_uri=work.as_uri(), initialization_options={"settings": settings}
        )
    )
    client.initialized(types.InitializedParams())
    uri = (work / "problem.py").as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)
        )
    )
    idle = Probe(client, uri, line)
    for _ in range(per_method // 4):
        await idle.round()
    await client.workspace_execute_command_async(
        types.ExecuteCommandParams(
            command="kernelEvolve.evolve",
            arguments=[{"uri": uri, "line": line, "seedPath": "seed_kernel.py"}],
        )
    )
    while not seen["candidate"] and not seen["finished"]:
        await asyncio.sleep(0.2)
    busy = Probe(client, uri, line)
    started = time.monotonic()
    while not seen["finished"] and len(busy.samples["hover"]) < per_method:
        await busy.round()
        await asyncio.sleep(pause_s)
    during = len(seen["candidate"])
    await client.workspace_execute_command_async(types.ExecuteCommandParams(command="kernelEvolve.cancel"))
    while not seen["finished"]:
        await asyncio.sleep(0.2)
    hints = await busy.requests()["inlayHint"]()
    actions = await busy.requests()["codeAction"]()
    hover = await busy.requests()["hover"]()
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    shutil.rmtree(work, ignore_errors=True)
    return {
        "example": example,
        "cpus": os.cpu_count(),
        "idle": summary(idle.samples),
        "during_search": summary(busy.samples),
        "measured_for_s": round(time.monotonic() - started, 1),
        "candidates_evaluated_while_measuring": during,
        "run_status": getattr(seen["finished"][0], "status", "?"),
        "candidates": [
            {
                k: getattr(c, k, None)
                for k in ("candidateId", "verdict", "stage", "speedup", "timing", "device")
            }
            | {"diff_lines": len((getattr(c, "diff", None) or "").splitlines())}
            for c in seen["candidate"]
        ],
        "hint": [h.label for h in hints or []],
        "code_actions_after": [a.title for a in actions or []],
        "hover_after": _hover_text(hover)[:1500],
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--example", default="fused_elementwise")
    parser.add_argument("--max-steps", type=int, default=6)
    parser.add_argument("--requests", type=int, default=300, help="samples per method during the search")
    parser.add_argument("--pause", type=float, default=0.05, help="seconds between rounds")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = asyncio.run(run(args.example, args.max_steps, args.requests, args.pause))
    if args.json:
        print(json.dumps(result))
        return 0
    print(f"example {result['example']}, {result['cpus']} CPUs, run {result['run_status']}")
    print(
        f"measured {result['measured_for_s']} s while the search ran "
        f"({result['candidates_evaluated_while_measuring']} candidates evaluated by then)"
    )
    for c in result["candidates"]:
        print(
            f"candidate {c['candidateId']}: {c['verdict']} at {c['stage']}, {c['speedup']} {c['timing']} {c['device']}"
        )
    print(f"inlay hint after the run: {result['hint']}")
    print(f"code actions after the run: {result['code_actions_after']}")
    print(f"{'':12} {'phase':14} {'n':>5} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8}")
    for phase in ("idle", "during_search"):
        for name, s in result[phase].items():
            print(
                f"{name:12} {phase:14} {s['n']:5d} {s['p50_ms']:8.2f} {s['p99_ms']:8.2f} {s['max_ms']:8.2f}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
