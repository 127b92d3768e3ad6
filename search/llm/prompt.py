"""Prompt synthesis: the static system blocks (cached) and the per-step user message.

System (identical for every call of a run, so it carries ``cache_control``): the role, the
workflow, and the full constraint documents. User message: the problem, the parent kernel, the
diagnosis, the retrieved documents, hardware facts, sibling outcomes and the negative memory.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kernelevolve.knowledge.kb import Document, Hit
from kernelevolve.search.llm.diagnosis import Diagnosis
from kernelevolve.search.problem import ProblemSpec, TensorSpec

ROLE = """You are the kernel-writing operator of kernelevolve, an agentic search for fast, correct \
Triton kernels. Each step you receive one node of a search tree (a PyTorch reference and, except in \
the draft phase, a parent Triton kernel with its evaluation feedback), a diagnosis of its bottleneck \
and knowledge retrieved for that diagnosis. You produce exactly one new candidate file per episode.

Work in this order: read the diagnosis and evidence; decide ONE main change that addresses the \
bottleneck (defer secondary issues); edit candidate.py with the tools or answer with the whole file in \
one ```python block; run lint (and quick_test for risky changes); then finish with one plain-text line \
saying what you changed and why. A correct kernel that is slightly slower is worth more than a fast \
wrong one: every candidate is verified by a sandboxed harness and rejected on any violation below."""


@dataclass
class SiblingOutcome:
    operator: str
    note: str
    outcome: str  # "correct, 1.42x (measured)" or "rejected at correctness: ..."


@dataclass
class PromptInputs:
    problem_source: str
    parent_source: str | None
    parent_outcome: str | None
    diagnosis: Diagnosis
    hits: list[Hit]
    hardware_facts: str | None = None
    siblings: list[SiblingOutcome] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    best_outcome: str | None = None
    parent_label: str = "parent kernel"
    spec_summary: str | None = None  # input shapes/dtypes and the ATen ops the reference runs


def system_blocks(constraints: list[Document]) -> list[dict[str, Any]]:
    """The static prefix: role and constraints, marked for prompt caching."""
    text = (
        ROLE
        + "\n\n"
        + "\n\n".join(f"<constraint id={d.id!r}>\n{d.body.strip()}\n</constraint>" for d in constraints)
    )
    return [{"type": "text", "text": text, "cache_control": {"type": "ephemeral"}}]


def user_message(p: PromptInputs, *, doc_chars: int = 6000) -> str:
    parts = ["<problem file='problem.py'>\n" + p.problem_source.strip() + "\n</problem>"]
    if p.spec_summary:
        parts.append("<problem_facts>\n" + p.spec_summary + "\n</problem_facts>")
    if p.parent_source:
        parts.append(
            f"<{_tag(p.parent_label)} file='candidate.py'>\n{p.parent_source.strip()}\n</{_tag(p.parent_label)}>"
        )
        if p.parent_outcome:
            parts.append("<parent_feedback>\n" + p.parent_outcome.strip() + "\n</parent_feedback>")
    else:
        parts.append("<draft>No parent kernel: this is the draft phase. candidate.py is empty.</draft>")
    parts.append("<diagnosis>\n" + p.diagnosis.render() + "\n</diagnosis>")
    if p.hardware_facts:
        parts.append("<hardware>\n" + p.hardware_facts + "\n</hardware>")
    for hit in p.hits:
        body = hit.document.body.strip()
        if len(body) > doc_chars:
            body = (
                body[:doc_chars] + f"\n[... truncated; read_file('knowledge/{hit.document.id}') for the rest]"
            )
        parts.append(f"<knowledge id={hit.document.id!r} title={hit.document.title!r}>\n{body}\n</knowledge>")
    if p.siblings:
        lines = [f"- {s.operator}: {s.outcome}" + (f" — {s.note}" if s.note else "") for s in p.siblings]
        parts.append("<siblings>Other children of the same parent:\n" + "\n".join(lines) + "\n</siblings>")
    if p.best_outcome:
        parts.append(f"<best_so_far>{p.best_outcome}</best_so_far>")
    if p.failures:
        lines = [f"- {f}" for f in p.failures[-12:]]
        parts.append(
            "<negative_memory>Already tried and failed; do not repeat:\n"
            + "\n".join(lines)
            + "\n</negative_memory>"
        )
    parts.append(
        "<task>Write the next candidate for this node. Change one main thing that addresses the diagnosis."
        " Keep tunables as integer literals at the launch site. End with one line describing the change."
        "</task>"
    )
    return "\n\n".join(parts)


def _tag(label: str) -> str:
    return label.replace(" ", "_")


def hardware_facts(name: str | None) -> str | None:
    """A compact line of the device's numbers from knowledge/hardware/<name>.toml (never restated here)."""
    if not name:
        return None
    try:
        from kernelevolve.knowledge.hardware import load_hardware  # type: ignore[attr-defined]

        hw = load_hardware(name)
    except Exception:
        return None
    bw = f"HBM {hw.hbm_gbps:.0f} GB/s datasheet"
    if hw.measured_copy_gbps:
        bw += f", {hw.measured_copy_gbps:.0f} GB/s measured copy"
    tensor = ", ".join(f"{k} {v:g}" for k, v in sorted(hw.tensor_tflops.items()))
    return (
        f"{hw.name} ({hw.arch}): {hw.sm_count} SMs/CUs, {bw}, L2 {hw.l2_bytes / 2**20:.0f} MiB,"
        f" shared memory {hw.smem_per_sm // 1024} KiB per SM, tensor TFLOP/s: {tensor or 'n/a'}."
    )


def spec_summary(spec: ProblemSpec) -> str:
    """What describe_problem saw when the reference ran: inputs, init args, ATen ops, extra sets."""
    inputs = [
        f"{t.dtype}[{'x'.join(map(str, t.shape))}]" if isinstance(t, TensorSpec) else str(t)
        for t in spec.inputs
    ]
    lines = [f"get_inputs(): {', '.join(inputs) or '(none recorded)'}"]
    if spec.init_inputs:
        lines.append(f"get_init_inputs(): {', '.join(spec.init_inputs)}")
    if spec.ops:
        lines.append(f"ATen ops of the reference, in order: {', '.join(spec.ops)}")
    extra = [
        n
        for n, has in (
            ("get_test_inputs", spec.has_test_inputs),
            ("get_benchmark_inputs", spec.has_benchmark_inputs),
        )
        if has
    ]
    if extra:
        lines.append(f"also checked on: {', '.join(extra)} (other shapes: never hard-code sizes)")
    return "\n".join(lines)
