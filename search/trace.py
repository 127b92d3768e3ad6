"""`kernelevolve trace SCRIPT`: run the user's program and record the real inputs of its ops.

The program runs in a child process (``python -m kernelevolve.search.trace``), never in the
caller's. A profile hook watches calls to functions defined in files under the trace root (the
script's folder by default), e.g. ``RowScale.forward`` or ``gelu_residual``, and records each
positional argument: tensors as shape, dtype and value statistics (min, max, mean, std), plain
values as their literal repr. ``__init__`` calls of those classes are recorded too, so the
constructor arguments are known. Up to ``MAX_SIGNATURES`` distinct shape signatures are kept per
function. The parent stores them in history (table ``traces``), where the language server finds
them when deriving a problem from a selection.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import tempfile
import threading
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

from kernelevolve.search.sandbox import without_secrets

MAX_SIGNATURES = 3
_LITERALS = (int, float, bool, str, type(None))


@dataclass
class TraceSummary:
    trace_id: str
    script: str
    returncode: int
    calls: list[dict[str, Any]] = field(default_factory=list)  # {file, qualname, call_index, args}
    stderr_tail: str = ""

    def describe(self) -> list[str]:
        lines = []
        for call in self.calls:
            args = ", ".join(describe_arg(a) for a in call["args"])
            lines.append(f"{Path(call['file']).name}:{call['qualname']}[{call['call_index']}]({args})")
        return lines


class TraceError(RuntimeError):
    """The script could not be traced (missing file, timeout); the message says which."""


def describe_arg(record: dict[str, Any]) -> str:
    if record.get("kind") == "tensor":
        return f"{record['dtype']}[{','.join(str(d) for d in record['shape'])}]"
    return str(record.get("repr"))


def run_trace(
    script: Path,
    args: list[str] | None = None,
    *,
    root: Path | None = None,
    timeout_s: float | None = 600.0,
    python: str | None = None,
) -> TraceSummary:
    """Run ``script`` in a child interpreter with the recorder; return what it saw."""
    script = Path(script).resolve()
    if not script.is_file():
        raise TraceError(f"script not found: {script}")
    root = (root or script.parent).resolve()
    with tempfile.TemporaryDirectory(prefix="kernelevolve-trace-") as tmp:
        out = Path(tmp) / "calls.json"
        cmd = [python or sys.executable, "-m", "kernelevolve.search.trace", str(out), str(root), str(script)]
        try:
            proc = subprocess.run(
                [*cmd, *(args or [])],
                cwd=script.parent,
                stdin=subprocess.DEVNULL,
                stdout=sys.stderr.fileno() if _has_fileno(sys.stderr) else None,
                stderr=subprocess.PIPE,
                text=True,
                timeout=timeout_s,
                env={**without_secrets(os.environ), "PYTHONUNBUFFERED": "1"},  # user code: no API key
            )
        except subprocess.TimeoutExpired as exc:
            raise TraceError(f"{script.name} did not finish within {timeout_s:g} s") from exc
        calls = json.loads(out.read_text()) if out.exists() else []
    return TraceSummary(
        trace_id=uuid.uuid4().hex,
        script=str(script),
        returncode=proc.returncode,
        calls=calls,
        stderr_tail="\n".join((proc.stderr or "").splitlines()[-20:]),
    )


def _has_fileno(stream: Any) -> bool:
    try:
        stream.fileno()
    except (AttributeError, OSError, ValueError):
        return False
    return True


# --- the child side ------------------------------------------------------------------------------


class Recorder:
    def __init__(self, root: Path) -> None:
        self.root = str(root) + os.sep
        self.skip = str(Path(__file__).resolve())  # never trace the recorder itself
        self.calls: list[dict[str, Any]] = []
        self._signatures: dict[tuple[str, str], list[str]] = {}
        self._busy = threading.local()

    def profile(self, frame: FrameType, event: str, arg: Any) -> None:
        if event != "call" or getattr(self._busy, "on", False):
            return
        code = frame.f_code
        filename = code.co_filename
        if not filename.startswith(self.root) or filename == self.skip or "site-packages" in filename:
            return
        self._busy.on = True
        try:
            self._record(frame)
        except Exception:  # a recorder bug must never break the user's program
            pass
        finally:
            self._busy.on = False

    def _record(self, frame: FrameType) -> None:
        import torch

        code = frame.f_code
        qualname = getattr(code, "co_qualname", code.co_name)
        if "<" in qualname:  # lambdas, comprehensions, <module>
            return
        names = code.co_varnames[: code.co_argcount]
        values = [frame.f_locals.get(n) for n in names]
        if names and names[0] in ("self", "cls"):
            if qualname.endswith(".__init__") and not isinstance(values[0], torch.nn.Module):
                return
            values = values[1:]
        if not qualname.endswith(".__init__") and not any(isinstance(v, torch.Tensor) for v in values):
            return
        records = [_arg_record(v) for v in values]
        signature = json.dumps([describe_arg(r) for r in records])
        seen = self._signatures.setdefault((code.co_filename, qualname), [])
        if signature in seen or len(seen) >= MAX_SIGNATURES:
            return
        seen.append(signature)
        self.calls.append(
            {"file": code.co_filename, "qualname": qualname, "call_index": len(seen) - 1, "args": records}
        )


def _arg_record(value: Any) -> dict[str, Any]:
    import torch

    if isinstance(value, torch.Tensor):
        t = value.detach()
        record: dict[str, Any] = {
            "kind": "tensor",
            "shape": list(t.shape),
            "dtype": str(t.dtype).removeprefix("torch."),
            "device": t.device.type,
        }
        if t.numel() > 0:
            if t.dtype == torch.bool:
                record["mean"] = float(t.float().mean())
            elif t.is_floating_point():
                f = t.float()
                record.update(min=float(f.min()), max=float(f.max()), mean=float(f.mean()))
                record["std"] = float(f.std()) if t.numel() > 1 else 0.0
            elif not t.is_complex():
                record.update(min=int(t.min()), max=int(t.max()))
        return record
    text = repr(value)
    if isinstance(value, _LITERALS) or _is_literal(text):
        return {"kind": "value", "repr": text}
    return {"kind": "value", "repr": "None", "unrecorded": type(value).__name__}


def _is_literal(text: str) -> bool:
    try:
        ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return False
    return len(text) < 200


def _child_main(argv: list[str]) -> int:
    import runpy

    out, root, script, *script_args = argv
    recorder = Recorder(Path(root))
    sys.argv = [script, *script_args]
    sys.path.insert(0, str(Path(script).parent))
    code = 0
    threading.setprofile(recorder.profile)  # type: ignore[arg-type]
    sys.setprofile(recorder.profile)  # type: ignore[arg-type]
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]
        Path(out).write_text(json.dumps(recorder.calls))
    return code


if __name__ == "__main__":
    raise SystemExit(_child_main(sys.argv[1:]))
