"""The template operator: capture the problem's ATen graph, lower it to verified Triton templates.

Draft phase (``ctx.parent is None``): capture the graph in a subprocess (search/capture.py), lower
it with the template library (search/lowering, knowledge/code_samples) into complete candidate
files, one per launch-setting variant (tile sizes, warps), each passing the static check before it
is proposed. Expansion: below one of its own candidates it offers the variants not yet in the run;
the tuning operator does the finer work. A graph with an op outside the library raises
OperatorUnavailable("not covered by the offline operators: aten.x, aten.y"): never skipped.
"""

from __future__ import annotations

import threading
from pathlib import Path

from kernelevolve.search.capture import CaptureError, OpGraph, capture_graph, capture_graphs
from kernelevolve.search.lowering.lower import lower
from kernelevolve.search.lowering.partition import uncovered_ops
from kernelevolve.search.lowering.pointwise_ops import LoweringError
from kernelevolve.search.lowering.variants import VARIANTS, Variant
from kernelevolve.search.operators.base import NodeContext, OperatorUnavailable, Proposal
from kernelevolve.search.problem import ProblemSpec, source_hash
from kernelevolve.search.static_check import Violation, check, format_violations

NOT_COVERED = "not covered by the offline operators"


def lower_candidate(
    graph: OpGraph, problem_source: str, variant: Variant, name: str
) -> tuple[str, list[Violation]]:
    """The candidate for one variant with the static check's verdict. The constructor is copied
    from Model; when the copy computes on tensors (forbidden in a candidate), the weights are
    allocated by name instead (the harness loads the reference's state_dict into them)."""
    source = lower(graph, problem_source, variant, problem_name=name)
    violations = check(source)
    if violations:
        source = lower(graph, problem_source, variant, problem_name=name, init="skeleton")
        violations = check(source)
    return source, violations


class TemplateOperator:
    name = "template"

    def __init__(self, *, capture_timeout_s: float = 180.0) -> None:
        self.capture_timeout_s = capture_timeout_s
        self._graphs: dict[str, OpGraph] = {}
        self._lock = threading.Lock()

    def graph(self, spec: ProblemSpec) -> OpGraph:
        """The captured graph of ``spec`` (one capture subprocess per problem source)."""
        with self._lock:
            cached = self._graphs.get(spec.source_hash)
        if cached is not None:
            return cached
        try:
            graph = capture_graph(Path(spec.path), timeout_s=self.capture_timeout_s)
        except CaptureError as exc:
            raise OperatorUnavailable(f"template operator: {exc}") from exc
        with self._lock:
            self._graphs[spec.source_hash] = graph
        return graph

    def prime(self, specs: list[ProblemSpec]) -> None:
        """Capture several problems in one subprocess (torch imports once) and keep their graphs;
        a problem that fails to capture is left for ``graph`` to report."""
        with self._lock:
            todo = [s for s in specs if s.source_hash not in self._graphs]
        if not todo:
            return
        results = capture_graphs([Path(s.path) for s in todo], timeout_s=self.capture_timeout_s)
        with self._lock:
            for spec, result in zip(todo, results, strict=True):
                if isinstance(result, OpGraph):
                    self._graphs[spec.source_hash] = result

    def uncovered(self, spec: ProblemSpec) -> list[str]:
        graph = self.graph(spec)
        ops: list[str] = []
        for g in [graph, *graph.alternates]:
            ops += [op for op in uncovered_ops(g) if op not in ops]
        return ops

    def candidates(self, spec: ProblemSpec, n: int, skip: frozenset[str] = frozenset()) -> list[Proposal]:
        """Up to ``n`` distinct lowered candidates whose source hash is not in ``skip``."""
        missing = self.uncovered(spec)
        if missing:
            raise OperatorUnavailable(f"{NOT_COVERED}: {', '.join(missing)}")
        graph = self.graph(spec)
        proposals: list[Proposal] = []
        seen = set(skip)
        rejected: list[str] = []
        for variant in VARIANTS:
            if len(proposals) >= n:
                break
            try:
                source, violations = lower_candidate(graph, spec.source, variant, spec.name)
            except LoweringError as exc:
                reason = str(exc).replace(", ", "; ")
                raise OperatorUnavailable(f"{NOT_COVERED}: {reason}") from exc
            digest = source_hash(source)
            if digest in seen:
                continue
            seen.add(digest)
            if violations:
                rejected.append(format_violations(violations, limit=2))
                continue
            kernels = source.split("Kernels: ", 1)[1].split(";", 1)[0] if "Kernels: " in source else "?"
            proposals.append(
                Proposal(source, self.name, f"template lowering ({kernels}), {variant.name} launch settings")
            )
        if not proposals and rejected and not skip:
            raise OperatorUnavailable(f"template candidates fail the static check: {rejected[0]}")
        return proposals

    def propose(self, ctx: NodeContext, n: int, cancel: threading.Event) -> list[Proposal]:
        if cancel.is_set() or n <= 0:
            return []
        if ctx.parent is not None and ctx.parent.operator != self.name:
            return []  # children of other operators' nodes are the tuning/LLM operators' work
        return self.candidates(ctx.spec, n, ctx.known_hashes)
