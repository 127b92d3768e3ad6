"""TemplateOperator: drafts from the captured graph, reports uncovered ops, and its candidates pass
the real harness (sandboxed worker, CPU interpreter) on every bundled example."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from kernelevolve.search.config import EvalConfig
from kernelevolve.search.harness import evaluate
from kernelevolve.search.operators.base import NodeContext, NodeView, OperatorUnavailable
from kernelevolve.search.operators.registry import parse_not_covered
from kernelevolve.search.operators.template import TemplateOperator
from kernelevolve.search.problem import ProblemSpec, source_hash
from kernelevolve.search.static_check import check

ROOT = Path(__file__).parents[1]
PROBLEMS = Path(__file__).parent / "template_problems"
EXAMPLES = ["rmsnorm", "softmax", "fused_elementwise", "gemm_epilogue", "embedding_bag", "fm_interaction"]


def spec_of(path: Path) -> ProblemSpec:
    source = path.read_text()
    return ProblemSpec(path=path, name=path.parent.name, source=source, source_hash=source_hash(source))


@pytest.fixture(scope="module")
def operator() -> TemplateOperator:
    op = TemplateOperator()
    paths = [PROBLEMS / "softmax_temp.py", PROBLEMS / "uncovered_ops.py"]
    paths += [ROOT / "examples" / name / "problem.py" for name in EXAMPLES]
    op.prime([spec_of(p) for p in paths])  # one capture subprocess for all of them
    return op


def view(source: str, operator: str) -> NodeView:
    return NodeView(candidate_id=1, source=source, operator=operator, result=None, fitness=0.0)


def test_drafts_distinct_candidates_that_pass_the_static_check(operator: TemplateOperator) -> None:
    ctx = NodeContext(spec=spec_of(PROBLEMS / "softmax_temp.py"), parent=None)
    proposals = operator.propose(ctx, 3, threading.Event())
    assert len(proposals) == 3
    assert len({p.source for p in proposals}) == 3
    for p in proposals:
        assert p.operator == "template" and "row" in p.note
        assert check(p.source) == []
        assert "class ModelNew(nn.Module)" in p.source and "@triton.jit" in p.source


def test_reports_uncovered_ops_by_name(operator: TemplateOperator) -> None:
    ctx = NodeContext(spec=spec_of(PROBLEMS / "uncovered_ops.py"), parent=None)
    with pytest.raises(OperatorUnavailable) as info:
        operator.propose(ctx, 2, threading.Event())
    assert str(info.value) == "not covered by the offline operators: aten.cumsum.default, aten.sort.default"
    assert parse_not_covered(str(info.value)) == ["aten.cumsum.default", "aten.sort.default"]


def test_expansion_offers_only_untried_variants_below_its_own_nodes(operator: TemplateOperator) -> None:
    spec = spec_of(PROBLEMS / "softmax_temp.py")
    first = operator.propose(NodeContext(spec=spec, parent=None), 2, threading.Event())
    known = frozenset(source_hash(p.source) for p in first)
    parent = view(first[0].source, "template")
    more = operator.propose(NodeContext(spec=spec, parent=parent, known_hashes=known), 2, threading.Event())
    assert more and not {source_hash(p.source) for p in more} & known
    assert (
        operator.propose(NodeContext(spec=spec, parent=view(first[0].source, "tuning")), 2, threading.Event())
        == []
    )


def test_cancelled_or_zero_requests_propose_nothing(operator: TemplateOperator) -> None:
    ctx = NodeContext(spec=spec_of(PROBLEMS / "softmax_temp.py"), parent=None)
    cancel = threading.Event()
    cancel.set()
    assert operator.propose(ctx, 3, cancel) == []
    assert operator.propose(ctx, 0, threading.Event()) == []


def test_a_problem_torch_export_cannot_trace_is_reported(tmp_path: Path) -> None:
    bad = tmp_path / "problem.py"
    bad.write_text(
        "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n"
        "        return x if x.sum() > 0 else -x\n"
        "def get_inputs():\n    return [torch.ones(1)]\ndef get_init_inputs():\n    return []\n"
    )
    with pytest.raises(
        OperatorUnavailable, match="template operator: capture failed: torch.export could not"
    ):
        TemplateOperator().propose(NodeContext(spec=spec_of(bad), parent=None), 1, threading.Event())


@pytest.mark.slow
@pytest.mark.parametrize("name", EXAMPLES)
def test_every_bundled_example_gets_a_candidate_the_harness_accepts(
    name: str, operator: TemplateOperator
) -> None:
    path = ROOT / "examples" / name / "problem.py"
    proposals = operator.propose(NodeContext(spec=spec_of(path), parent=None), 1, threading.Event())
    assert len(proposals) == 1
    result = evaluate(path, proposals[0].source, EvalConfig(device="cpu", skip_timing=True, seeds=(0,)))
    assert result.correct, f"{name}: {result.stage.value}: {result.reason}\n{result.log_tail[-2000:]}"
