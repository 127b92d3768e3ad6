"""The verified Triton template library in knowledge/code_samples/, and how to fill its slots.

Each sample is a runnable module (kernel beside its launcher, Triton-tutorial style) whose header
docstring says what it computes, its tunables and constraints; ``manifest.json`` lists them.
Kernels with variable parts mark them as slots::

    # @slot body
    ...default lines (make the sample a complete, tested instance)...
    # @end

``kernel_source(sample, kernel, name, slots)`` returns that kernel's source renamed to ``name``
with each slot's lines replaced by the given text (re-indented to the marker's indentation).
Nothing here imports torch or triton: the lowering renders text, the sandbox runs it.
"""

from __future__ import annotations

import ast
import json
import re
import textwrap
from dataclasses import dataclass, field
from functools import cache, lru_cache
from pathlib import Path

SAMPLES_DIR = Path(__file__).resolve().parent / "code_samples"
_SLOT = re.compile(r"^(?P<indent>[ \t]*)# @slot (?P<name>\w+)\s*$")
_END = re.compile(r"^[ \t]*# @end\s*$")


class TemplateError(KeyError):
    """A sample, kernel or slot that the library does not have."""


@dataclass(frozen=True)
class TemplateInfo:
    name: str  # sample file stem
    kernel: str  # its main @triton.jit function (the one with slots, if any)
    computes: str
    aten_ops: list[str] = field(default_factory=list)
    tunables: list[str] = field(default_factory=list)
    slots: list[str] = field(default_factory=list)
    kernels: list[str] = field(default_factory=list)  # every @triton.jit function of the sample

    @property
    def path(self) -> Path:
        return SAMPLES_DIR / f"{self.name}.py"


@lru_cache(maxsize=1)
def manifest() -> dict[str, TemplateInfo]:
    data = json.loads((SAMPLES_DIR / "manifest.json").read_text(encoding="utf-8"))
    return {
        entry["name"]: TemplateInfo(
            name=entry["name"],
            kernel=entry["kernel"],
            computes=entry["computes"],
            aten_ops=list(entry.get("aten_ops", [])),
            tunables=list(entry.get("tunables", [])),
            slots=list(entry.get("slots", [])),
            kernels=list(entry.get("kernels", [entry["kernel"]])),
        )
        for entry in data["templates"]
    }


@cache
def sample_source(sample: str) -> str:
    path = SAMPLES_DIR / f"{sample}.py"
    if not path.is_file():
        raise TemplateError(f"no template sample {sample!r} in {SAMPLES_DIR}")
    return path.read_text(encoding="utf-8")


@cache
def function_source(sample: str, function: str) -> str:
    """The source of one top-level function of a sample, decorators included."""
    source = sample_source(sample)
    tree = ast.parse(source)
    lines = source.splitlines()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == function:
            start = min([d.lineno for d in node.decorator_list] + [node.lineno]) - 1
            assert node.end_lineno is not None
            return "\n".join(lines[start : node.end_lineno]) + "\n"
    raise TemplateError(f"sample {sample!r} has no function {function!r}")


def slot_names(sample: str, function: str) -> list[str]:
    return [
        m.group("name") for line in function_source(sample, function).splitlines() if (m := _SLOT.match(line))
    ]


def kernel_source(sample: str, kernel: str, name: str, slots: dict[str, str]) -> str:
    """Render ``kernel`` of ``sample`` as ``name``, replacing every slot listed in ``slots``."""
    out: list[str] = []
    lines = function_source(sample, kernel).splitlines()
    unknown = set(slots) - set(slot_names(sample, kernel))
    if unknown:
        raise TemplateError(f"{sample}.{kernel} has no slot(s) {sorted(unknown)}")
    i = 0
    while i < len(lines):
        match = _SLOT.match(lines[i])
        if match is None:
            out.append(lines[i])
            i += 1
            continue
        j = i + 1
        while j < len(lines) and not _END.match(lines[j]):
            j += 1
        slot = match.group("name")
        if slot in slots:
            body = textwrap.dedent(slots[slot]).strip("\n")
            out.extend(textwrap.indent(body, match.group("indent")).splitlines() if body else [])
        else:
            out.extend(lines[i + 1 : j])
        i = j + 1
    text = "\n".join(out) + "\n"
    return re.sub(rf"\b{re.escape(kernel)}\b", name, text)
