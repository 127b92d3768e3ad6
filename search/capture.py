"""Capture a problem's op graph down to core ATen ops, in a subprocess.

``python -m kernelevolve.search.capture PROBLEM...`` imports each problem, builds
``Model(*get_init_inputs())`` in eval mode, exports it with ``torch.export`` on ``get_inputs()``
(every tensor dim marked ``Dim.AUTO`` so that view sizes stay symbolic where the model allows),
decomposes to core ATen and prints one line per problem on stdout: ``MARK`` then one JSON object
(schema: ``capture_to_json``; ``{"error": ...}`` for a problem that failed).

``capture_graph(problem)`` runs that in a child process: the problem is the user's code and the
caller may be the language server, so torch and the problem never load in the caller's process.
Values are encoded as JSON: ``{"ref": NAME}`` for another node or input, ``{"dtype": "float32"}``,
``{"device": "cpu"}``, ``{"sym": "s0*s1", "hint": 32}`` for a symbolic int, lists as lists, and
plain scalars as themselves (``inf``/``nan`` as ``{"float": "inf"}``).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelevolve.search.sandbox import without_secrets

CAPTURE_VERSION = 1
MARK = "@kernelevolve-capture "  # prefixes each result line: the problem itself may print


class CaptureError(RuntimeError):
    """The problem's graph could not be captured; the message is one line naming the cause."""


@dataclass
class TensorMeta:
    shape: list[int]  # concrete sizes for get_inputs()
    sym_shape: list[int | str]  # symbolic sizes where export kept them dynamic ("s0", "s0*s1")
    dtype: str
    stride: list[int]

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TensorMeta:
        return cls(list(data["shape"]), list(data["sym_shape"]), data["dtype"], list(data["stride"]))


@dataclass
class GraphInput:
    name: str
    kind: str  # "parameter", "buffer", "constant", "user_input"
    target: str | int  # attribute path (parameters, buffers) or forward-argument index
    meta: TensorMeta | None  # None for a non-tensor forward argument
    value: Any = None  # non-tensor forward argument (JSON-encoded)
    persistent: bool = True  # buffers: False when not in the state_dict


@dataclass
class GraphNode:
    name: str
    op: str  # "aten.add.Tensor", "operator.getitem", "operator.mul", ...
    args: list[Any]
    kwargs: dict[str, Any]
    metas: list[TensorMeta | None]  # one per output (tuple ops have several)
    sym: dict[str, Any] | None = None  # a node producing a symbolic int: {"sym": ..., "hint": ...}

    @property
    def meta(self) -> TensorMeta | None:
        return self.metas[0] if len(self.metas) == 1 else None


@dataclass
class OpGraph:
    problem: str
    method: str  # "export-dynamic" or "export-static"
    init_params: list[str]  # Model.__init__ parameter names (without self)
    forward_params: list[str]  # Model.forward parameter names (without self)
    inputs: list[GraphInput]
    nodes: list[GraphNode]
    outputs: list[Any]  # encoded values, usually refs
    output_is_tuple: bool
    torch_version: str = ""
    alternates: list[OpGraph] = field(default_factory=list)  # same model at other input ranks/dtypes

    @property
    def ops(self) -> list[str]:
        return [n.op for n in self.nodes]

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> OpGraph:
        if data.get("version") != CAPTURE_VERSION:
            raise CaptureError(f"capture format version {data.get('version')} != {CAPTURE_VERSION}")
        inputs = [
            GraphInput(
                i["name"],
                i["kind"],
                i["target"],
                TensorMeta.from_dict(i["meta"]) if i.get("meta") else None,
                i.get("value"),
                bool(i.get("persistent", True)),
            )
            for i in data["inputs"]
        ]
        nodes = [
            GraphNode(
                n["name"],
                n["op"],
                list(n["args"]),
                dict(n["kwargs"]),
                [TensorMeta.from_dict(m) if m else None for m in n["metas"]],
                n.get("sym"),
            )
            for n in data["nodes"]
        ]
        return cls(
            problem=data["problem"],
            method=data["method"],
            init_params=list(data["init_params"]),
            forward_params=list(data["forward_params"]),
            inputs=inputs,
            nodes=nodes,
            outputs=list(data["outputs"]),
            output_is_tuple=bool(data["output_is_tuple"]),
            torch_version=data.get("torch", ""),
            alternates=[
                cls.from_dict({**alt, "version": CAPTURE_VERSION}) for alt in data.get("alternates", [])
            ],
        )


def capture_graph(problem: Path, *, timeout_s: float = 180.0, python: str | None = None) -> OpGraph:
    """Run the capture subprocess on ``problem`` and parse its JSON. Raises CaptureError."""
    result = capture_graphs([problem], timeout_s=timeout_s, python=python)[0]
    if isinstance(result, CaptureError):
        raise result
    return result


def capture_graphs(
    problems: list[Path], *, timeout_s: float = 180.0, python: str | None = None
) -> list[OpGraph | CaptureError]:
    """Capture several problems in one subprocess (torch imports once); one result per problem,
    a CaptureError in place of each problem that failed."""
    paths = [Path(p).resolve() for p in problems]
    results: list[OpGraph | CaptureError | None] = [
        None if p.is_file() else CaptureError(f"problem file not found: {p}") for p in paths
    ]
    todo = [p for p, r in zip(paths, results, strict=True) if r is None]
    if todo:
        env = without_secrets(os.environ)  # the problem's code runs there: no API key
        env["CUDA_VISIBLE_DEVICES"] = ""  # capture needs shapes and dtypes only: keep GPUs untouched
        cmd = [python or sys.executable, "-m", "kernelevolve.search.capture", *map(str, todo)]
        try:
            proc = subprocess.run(
                cmd,
                capture_output=True,
                text=True,
                timeout=timeout_s * len(todo),
                env=env,
                cwd=str(todo[0].parent),
            )
        except subprocess.TimeoutExpired as exc:
            raise CaptureError(f"graph capture timed out after {timeout_s * len(todo):.0f}s") from exc
        lines = [ln[len(MARK) :] for ln in proc.stdout.splitlines() if ln.startswith(MARK)]
        if len(lines) != len(todo):
            err = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
            reason = err[-1] if err else f"graph capture exited with status {proc.returncode}"
            raise CaptureError(reason)
        parsed = iter(lines)
        for i, r in enumerate(results):
            if r is None:
                results[i] = _parse_line(next(parsed))
    return [r for r in results if r is not None]


def _parse_line(line: str) -> OpGraph | CaptureError:
    try:
        data = json.loads(line)
        if "error" in data:
            return CaptureError(data["error"])
        return OpGraph.from_dict(data)
    except (ValueError, KeyError, TypeError) as exc:
        return CaptureError(f"graph capture printed unreadable output: {exc}")


# --- everything below runs in the child process -------------------------------------------------


def _load_problem(path: Path) -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location("_kernelevolve_problem", path)
    if spec is None or spec.loader is None:
        raise CaptureError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _encode(value: Any) -> Any:
    import torch
    import torch.fx

    if isinstance(value, torch.fx.Node):
        return {"ref": value.name}
    if isinstance(value, torch.dtype):
        return {"dtype": str(value).removeprefix("torch.")}
    if isinstance(value, torch.device):
        return {"device": value.type}
    if isinstance(value, torch.layout):
        return {"layout": str(value).removeprefix("torch.")}
    if isinstance(value, torch.memory_format):
        return {"memory_format": str(value).removeprefix("torch.")}
    if isinstance(value, bool | int | str) or value is None:
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"float": str(value)}
    if isinstance(value, list | tuple):
        return [_encode(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _encode(v) for k, v in value.items()}
    if isinstance(value, torch.SymInt):
        return _sym(value)
    return {"repr": repr(value)}


def _sym(value: Any) -> dict[str, Any]:
    hint = value.node.hint if hasattr(value, "node") else int(value)
    return {"sym": str(value), "hint": int(hint) if hint is not None else None}


def _size(value: Any) -> tuple[int, int | str]:
    import torch

    if isinstance(value, torch.SymInt):
        info = _sym(value)
        expr = info["sym"]
        try:
            return int(info["hint"]), int(expr)
        except ValueError:
            return int(info["hint"]), expr
    return int(value), int(value)


def _meta(val: Any) -> dict[str, Any] | None:
    import torch

    if not isinstance(val, torch.Tensor):
        return None
    sizes = [_size(s) for s in val.shape]
    strides = [_size(s)[0] for s in val.stride()]
    return {
        "shape": [c for c, _ in sizes],
        "sym_shape": [s for _, s in sizes],
        "dtype": str(val.dtype).removeprefix("torch."),
        "stride": strides,
    }


def _op_name(target: Any) -> str:
    import operator

    if hasattr(target, "_schema") or hasattr(target, "overloadpacket"):
        return "aten." + str(target).removeprefix("aten.") if "." in str(target) else str(target)
    if getattr(target, "__module__", None) in ("_operator", "operator") or target in vars(operator).values():
        return f"operator.{target.__name__}"
    module = getattr(target, "__module__", "") or ""
    return f"{module}.{getattr(target, '__name__', repr(target))}"


def _export(model: Any, args: tuple[Any, ...]) -> tuple[Any, str]:
    import torch
    from torch.export import Dim, export

    dynamic = tuple(
        {i: Dim.AUTO for i in range(a.dim())} if isinstance(a, torch.Tensor) and a.dim() > 0 else None
        for a in args
    )
    try:
        return export(model, args, dynamic_shapes=dynamic), "export-dynamic"
    except Exception:  # some models only trace with their example shapes
        return export(model, args), "export-static"


def _rank_signature(args: tuple[Any, ...]) -> tuple[tuple[int, str] | None, ...]:
    import torch

    return tuple((a.dim(), str(a.dtype)) if isinstance(a, torch.Tensor) else None for a in args)


def _graph_json(model: Any, args: tuple[Any, ...]) -> dict[str, Any]:
    import torch

    with torch.no_grad():
        exported, method = _export(model, args)
    exported = exported.run_decompositions()
    kinds: dict[str, tuple[str, str | int]] = {}
    transient: set[str] = set()
    user_index = 0
    for spec in exported.graph_signature.input_specs:
        kind = spec.kind.name.lower()
        if kind == "buffer" and getattr(spec, "persistent", True) is False:
            transient.add(spec.arg.name)
        if kind == "user_input":
            kinds[spec.arg.name] = ("user_input", user_index)
            user_index += 1
        elif kind in ("parameter", "buffer"):
            kinds[spec.arg.name] = (kind, str(spec.target))
        else:
            kinds[spec.arg.name] = ("constant", str(spec.target))
    inputs: list[dict[str, Any]] = []
    nodes: list[dict[str, Any]] = []
    outputs: list[Any] = []
    for node in exported.graph.nodes:
        val = node.meta.get("val")
        if node.op == "placeholder":
            kind, target = kinds.get(node.name, ("user_input", -1))
            entry: dict[str, Any] = {"name": node.name, "kind": kind, "target": target, "meta": _meta(val)}
            entry["persistent"] = node.name not in transient
            if entry["meta"] is None and kind == "user_input" and isinstance(target, int):
                entry["value"] = _encode(args[target])
            inputs.append(entry)
        elif node.op == "call_function":
            vals = val if isinstance(val, list | tuple) else [val]
            item: dict[str, Any] = {
                "name": node.name,
                "op": _op_name(node.target),
                "args": _encode(list(node.args)),
                "kwargs": _encode(dict(node.kwargs)),
                "metas": [_meta(v) for v in vals],
            }
            if isinstance(val, torch.SymInt | int) and not isinstance(val, bool):
                item["sym"] = _sym(val) if isinstance(val, torch.SymInt) else {"sym": str(val), "hint": val}
            nodes.append(item)
        elif node.op == "output":
            outputs = _encode(list(node.args[0]))
        else:
            raise CaptureError(f"unexpected graph node kind {node.op} ({node.name})")
    return {"method": method, "inputs": inputs, "nodes": nodes, "outputs": outputs}


def capture_to_json(path: Path) -> dict[str, Any]:
    """The main graph (get_inputs()) plus one alternate per other (rank, dtype) signature of the inputs found in
    get_test_inputs(), so that candidates can serve every tested rank."""
    import inspect

    import torch

    module = _load_problem(path)
    for name in ("Model", "get_inputs", "get_init_inputs"):
        if not hasattr(module, name):
            raise CaptureError(f"{path.name}: problem lacks {name}")
    torch.manual_seed(0)
    model = module.Model(*module.get_init_inputs()).eval()
    torch.manual_seed(0)
    args = tuple(module.get_inputs())
    data = _graph_json(model, args)
    with torch.no_grad():
        result = model(*args)
    init_params = [p for p in inspect.signature(module.Model.__init__).parameters if p != "self"]
    forward_params = list(inspect.signature(model.forward).parameters)
    alternates: list[dict[str, Any]] = []
    seen = {_rank_signature(args)}
    if hasattr(module, "get_test_inputs"):
        torch.manual_seed(0)
        for test_args in module.get_test_inputs():
            sig = _rank_signature(tuple(test_args))
            if sig in seen:
                continue
            seen.add(sig)
            alt = _graph_json(model, tuple(test_args))
            alt.update(problem=str(path), init_params=init_params, forward_params=forward_params)
            alt["output_is_tuple"] = isinstance(result, tuple | list)
            alternates.append(alt)
    return {
        "version": CAPTURE_VERSION,
        "problem": str(path),
        "torch": torch.__version__,
        "init_params": init_params,
        "forward_params": forward_params,
        "output_is_tuple": isinstance(result, tuple | list),
        **data,
        "alternates": alternates,
    }


def main(argv: list[str] | None = None) -> int:
    """Print one JSON line per problem: the graph, or {"error": one line}."""
    argv = sys.argv[1:] if argv is None else argv
    if not argv:
        print("usage: python -m kernelevolve.search.capture PROBLEM [PROBLEM ...]", file=sys.stderr)
        return 2
    import warnings

    warnings.filterwarnings("ignore")
    for arg in argv:
        path = Path(arg).resolve()
        try:
            data = capture_to_json(path)
        except CaptureError as exc:
            data = {"error": f"capture failed: {exc}"}
        except Exception as exc:  # the user's model may fail to export in many ways: one clear line
            msg = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            data = {
                "error": f"capture failed: torch.export could not trace {path.name}: {type(exc).__name__}: {msg}"
            }
        finally:
            sys.modules.pop("_kernelevolve_problem", None)
        sys.stdout.write(MARK + json.dumps(data) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
