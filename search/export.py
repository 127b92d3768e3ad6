"""Outcome files of a search: the best kernel, a shape-bucketed dispatcher, a regression test.

- ``<stem>_evolved.py``: the candidate as evaluated, with a header comment. It defines
  ``ModelNew`` (the pure kernel path), so ``kernelevolve eval PROBLEM THAT_FILE`` re-verifies it.
- ``<stem>_dispatch.py``: ``class Dispatch(nn.Module)`` for production. Per input shape bucket
  (tensor shapes + dtypes) measured on the same device model it runs the fastest of three paths:
  the kernel where its *measured* speedup over the best baseline was > 1 even at its p80 time,
  else the baseline that was fastest there: the original ``Model`` under ``torch.compile`` (default
  mode or ``max-autotune``, compiled lazily, eager for good if compiling fails) or eagerly. Unknown
  shapes, CPU tensors, another GPU and modelled-only evidence get the eager ``Model``.
  ``choose_path(args)`` says which path inputs take. The evidence table is embedded as data.
- ``test_<stem>_evolved.py``: a pytest regression test that re-evaluates the kernel with the
  harness and asserts it is still correct.

``render_outcome_files`` returns the three texts without writing (the language server sends
them as workspace edits); ``write_outcome_files`` writes them.
"""

from __future__ import annotations

import os
import pprint
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from kernelevolve.search.history import CandidateRecord, History
from kernelevolve.search.results import ShapeTiming, TimingKind


@dataclass(frozen=True)
class OutcomeFiles:
    kernel_path: Path
    kernel: str
    dispatch_path: Path
    dispatch: str
    test_path: Path
    test: str


def outcome_paths(problem: Path, out_path: Path | None) -> tuple[Path, Path, Path]:
    kernel = Path(out_path) if out_path is not None else problem.with_name(f"{problem.stem}_evolved.py")
    base = kernel.stem.removesuffix("_evolved")
    return kernel, kernel.with_name(f"{base}_dispatch.py"), kernel.with_name(f"test_{kernel.stem}.py")


def best_baseline(t: ShapeTiming) -> str:
    """Which baseline had the lowest median on this set: "eager", "compile" (torch.compile, default
    mode) or "compile_max_autotune"; eager wins ties (no compile to pay for)."""
    medians = {"eager": t.eager.median_ms}
    for name, stats in (("compile", t.compile), ("compile_max_autotune", t.compile_max_autotune)):
        if stats is not None:
            medians[name] = stats.median_ms
    return min(medians, key=lambda name: medians[name])  # first of equal minima: dict order


def evidence(candidate: CandidateRecord) -> dict[str, Any]:
    """The per-shape table the dispatcher decides on."""
    result = candidate.result
    if result is None:
        raise ValueError(f"candidate {candidate.id} has not been evaluated")
    dtypes = {s.name: s.dtypes for s in result.input_sets}
    fingerprint = result.fingerprint
    rows = [
        {
            "input_set": t.input_set,
            "shapes": t.shapes,
            "dtypes": dtypes.get(t.input_set, []),
            "speedup": round(t.speedup, 4),
            # the kernel at its p80 time: the dispatcher trusts a win only beyond the spread
            "speedup_p80": round(t.best_baseline_ms / max(t.candidate.p80_ms, 1e-12), 4),
            "kernel_ms": t.candidate.median_ms,
            "best_baseline_ms": t.best_baseline_ms,
            "best_baseline": best_baseline(t),  # the path the dispatcher takes when not the kernel
            "kind": t.kind.value,
        }
        for t in result.timings
    ]
    return {
        "run_id": candidate.run_id,
        "candidate_id": candidate.id,
        "timing_kind": result.timing_kind.value if result.timing_kind else None,
        "device": fingerprint.device if fingerprint else None,
        "fingerprint": asdict(fingerprint) if fingerprint else None,
        "sets": rows,
    }


def _relative(target: Path, start_dir: Path) -> str:
    """``target`` relative to ``start_dir`` when they are near (the usual case: side by side),
    else absolute, so the generated files keep working when moved together with the problem."""
    rel = Path(os.path.relpath(target.resolve(), start_dir.resolve()))
    if rel.parts[:3] == ("..", "..", ".."):
        return target.resolve().as_posix()
    return rel.as_posix()


def _kernel_text(candidate: CandidateRecord, problem: Path, kernel_path: Path) -> str:
    result = candidate.result
    assert result is not None
    if result.timing_kind is TimingKind.MEASURED:
        how = f"{result.speedup:.2f}x measured on {result.fingerprint.device if result.fingerprint else '?'}"
    elif result.speedup is not None:
        how = f"~{result.speedup:.2f}x modelled (Triton interpreter; not a measurement)"
    else:
        how = "correct, untimed"
    rel = _relative(problem, kernel_path.parent)
    header = (
        f"# Evolved by kernelevolve: run {candidate.run_id}, candidate {candidate.id}, {how}.\n"
        f"# Re-verify: kernelevolve eval {rel} {kernel_path.name}\n"
    )
    return header + candidate.source


DISPATCH_TEMPLATE = '''"""Shape-bucketed dispatch generated by kernelevolve (run {run_id}, candidate {candidate_id}).

For each input bucket (tensor shapes + dtypes) MEASURED on this device model, ``choose_path``
picks the fastest of three paths:

- "kernel": the evolved Triton kernel, where it beat the best baseline even at its p80 time;
- "compile" / "compile_max_autotune": the original PyTorch Model under torch.compile (default
  mode / mode="max-autotune"), where that baseline was the fastest. Compiled on first use, once
  per mode; if torch.compile fails (creating it or running it) the Model runs eagerly from then on;
- "eager": the original PyTorch Model, where eager was the fastest, and wherever there is no
  evidence: unknown shapes, CPU tensors, another GPU model, modelled-only evidence.

Regenerate rather than edit.
"""

from __future__ import annotations

import functools
import importlib.util
import warnings
from pathlib import Path
from typing import Any

import torch
from torch import nn

_HERE = Path(__file__).resolve().parent
PROBLEM_FILE = _HERE / {problem_rel!r}
KERNEL_FILE = _HERE / {kernel_rel!r}

EVIDENCE: dict[str, Any] = {evidence}

# The torch.compile mode of each compiled path.
COMPILE_MODES: dict[str, str | None] = {{"compile": None, "compile_max_autotune": "max-autotune"}}


def _load(name: str, path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {{path}}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_problem = _load("_kernelevolve_problem_{candidate_id}", PROBLEM_FILE)
_kernel = _load("_kernelevolve_kernel_{candidate_id}", KERNEL_FILE)


def _tensors(obj: Any) -> list[torch.Tensor]:
    if isinstance(obj, torch.Tensor):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [t for v in obj for t in _tensors(v)]
    if isinstance(obj, dict):
        return [t for v in obj.values() for t in _tensors(v)]
    return []


def _bucket(shapes: list[list[int]], dtypes: list[str]) -> tuple[Any, ...]:
    return (tuple(tuple(s) for s in shapes), tuple(dtypes))


def _fastest(row: dict[str, Any]) -> str:
    """The kernel if it won even at its p80 time, else the baseline with the lowest median."""
    return "kernel" if row["speedup_p80"] > 1.0 else row["best_baseline"]


# The path of each measured bucket (the harness times a bucket once); other buckets run eagerly.
PATHS: dict[tuple[Any, ...], str] = {{
    _bucket(row["shapes"], row["dtypes"]): _fastest(row)
    for row in EVIDENCE["sets"]
    if EVIDENCE["timing_kind"] == "measured" and row["kind"] == "measured"
}}
FAST_BUCKETS = frozenset(key for key, path in PATHS.items() if path == "kernel")


@functools.cache
def _device_name(index: int) -> str:
    return torch.cuda.get_device_name(index)


def choose_path(args: tuple[Any, ...]) -> str:
    """The path these inputs take: "kernel", "compile", "compile_max_autotune" or "eager"."""
    tensors = _tensors(list(args))
    if not tensors or not PATHS or not all(t.is_cuda for t in tensors):
        return "eager"
    if _device_name(tensors[0].device.index or 0) != EVIDENCE["device"]:
        return "eager"
    key = _bucket([list(t.shape) for t in tensors], [str(t.dtype).removeprefix("torch.") for t in tensors])
    return PATHS.get(key, "eager")


def use_kernel(args: tuple[Any, ...]) -> bool:
    """True when these inputs take the kernel path (kept for callers of earlier dispatchers)."""
    return choose_path(args) == "kernel"


def _tie(kernel: nn.Module, reference: nn.Module) -> None:
    """Share the reference's parameters and buffers with the kernel module where names match."""
    ref: dict[str, torch.Tensor] = dict(reference.named_parameters())
    ref.update(reference.named_buffers())
    for name, tensor in list(kernel.named_parameters()) + list(kernel.named_buffers()):
        shared = ref.get(name)
        if shared is None or shared.shape != tensor.shape or shared.dtype != tensor.dtype:
            continue
        owner_name, _, attr = name.rpartition(".")
        owner = kernel.get_submodule(owner_name) if owner_name else kernel
        if isinstance(shared, nn.Parameter):
            setattr(owner, attr, shared)
        else:
            owner._buffers[attr] = shared


class Dispatch(nn.Module):
    def __init__(self, *init_inputs: Any, **init_kwargs: Any) -> None:
        super().__init__()
        self.reference = _problem.Model(*init_inputs, **init_kwargs)
        self.kernel = _kernel.ModelNew(*init_inputs, **init_kwargs)
        _tie(self.kernel, self.reference)
        # torch.compile(self.reference, mode=...) per compiled path, made on first use. Plain dicts:
        # the compiled wrappers are not submodules, so state_dict() holds the weights once.
        self.compiled: dict[str, Any] = {{}}
        self.compile_failures: dict[str, str] = {{}}  # path -> why it now runs eagerly

    def forward(self, *args: Any) -> Any:
        path = choose_path(args)
        if path == "kernel":
            return self.kernel(*args)
        if path in COMPILE_MODES and path not in self.compile_failures:
            return self.run_compiled(path, args)
        return self.reference(*args)

    def run_compiled(self, path: str, args: tuple[Any, ...]) -> Any:
        """The reference under torch.compile for ``path``; if compiling fails, eagerly for good."""
        try:
            compiled = self.compiled.get(path)
            if compiled is None:
                compiled = torch.compile(self.reference, mode=COMPILE_MODES[path])
                self.compiled[path] = compiled
            return compiled(*args)
        except Exception as exc:
            out = self.reference(*args)  # raises too when the inputs are at fault: compile stays on
            self.compiled.pop(path, None)
            self.compile_failures[path] = f"{{type(exc).__name__}}: {{exc}}"
            warnings.warn(
                f"torch.compile(mode={{COMPILE_MODES[path]!r}}) failed: {{self.compile_failures[path]}}; "
                "the eager Model runs in its place from now on",
                RuntimeWarning,
                stacklevel=2,
            )
            return out
'''


TEST_TEMPLATE = '''"""Regression test generated by kernelevolve (run {run_id}, candidate {candidate_id}).

Re-runs the harness (correctness, anti-cheat checks) on the evolved kernel. Timing is skipped:
speed is a measurement, not a test.
"""

from __future__ import annotations

from pathlib import Path

from kernelevolve.search.config import EvalConfig
from kernelevolve.search.harness import evaluate

HERE = Path(__file__).resolve().parent
PROBLEM_FILE = HERE / {problem_rel!r}
KERNEL_FILE = HERE / {kernel_rel!r}


def test_{name}_is_still_correct() -> None:
    result = evaluate(PROBLEM_FILE, KERNEL_FILE.read_text(encoding="utf-8"), EvalConfig(skip_timing=True))
    assert result.correct, f"{{result.stage.value}}: {{result.reason}}"
'''


def render_outcome_files(
    history: History, problem: Path, candidate_id: int, out_path: Path | None = None
) -> OutcomeFiles:
    candidate = history.get_candidate(candidate_id)
    if candidate is None or candidate.result is None or not candidate.result.correct:
        raise ValueError(f"candidate {candidate_id} is not an evaluated, correct candidate")
    problem = Path(problem)
    kernel_path, dispatch_path, test_path = outcome_paths(problem, out_path)
    fields = {
        "run_id": candidate.run_id,
        "candidate_id": candidate.id,
        "problem_rel": _relative(problem, kernel_path.parent),
        "kernel_rel": kernel_path.name,
    }
    table = pprint.pformat(evidence(candidate), width=100, sort_dicts=False)
    name = "".join(c if c.isalnum() else "_" for c in kernel_path.stem)
    return OutcomeFiles(
        kernel_path=kernel_path,
        kernel=_kernel_text(candidate, problem, kernel_path),
        dispatch_path=dispatch_path,
        dispatch=DISPATCH_TEMPLATE.format(evidence=table, **fields),
        test_path=test_path,
        test=TEST_TEMPLATE.format(name=name, **fields),
    )


def write_outcome_files(
    history: History, problem: Path, candidate_id: int, out_path: Path | None = None
) -> tuple[Path, Path, Path]:
    files = render_outcome_files(history, problem, candidate_id, out_path)
    files.kernel_path.parent.mkdir(parents=True, exist_ok=True)
    for path, text in (
        (files.kernel_path, files.kernel),
        (files.dispatch_path, files.dispatch),
        (files.test_path, files.test),
    ):
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    return files.kernel_path, files.dispatch_path, files.test_path
