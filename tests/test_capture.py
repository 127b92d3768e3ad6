"""Op-graph capture: a real subprocess exports the problem down to core ATen and prints JSON."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from kernelevolve.search.capture import CaptureError, OpGraph, capture_graph, capture_graphs

PROBLEMS = Path(__file__).parent / "template_problems"
SOFTMAX_EXAMPLE = Path(__file__).parents[1] / "examples" / "softmax" / "problem.py"


@pytest.fixture(scope="module")
def graphs() -> list[OpGraph]:
    """One capture subprocess for all four problems (torch imports once)."""
    paths = [
        PROBLEMS / "rmsnorm.py",
        SOFTMAX_EXAMPLE,
        PROBLEMS / "row_stats.py",
        PROBLEMS / "embedding_bag.py",
    ]
    results = capture_graphs(paths)
    assert all(isinstance(r, OpGraph) for r in results), results
    return [r for r in results if isinstance(r, OpGraph)]


@pytest.fixture(scope="module")
def rmsnorm_graph(graphs: list[OpGraph]) -> OpGraph:
    return graphs[0]


def test_capture_lists_parameters_inputs_and_aten_nodes(rmsnorm_graph) -> None:  # type: ignore[no-untyped-def]
    g = rmsnorm_graph
    kinds = {i.name: (i.kind, i.target) for i in g.inputs}
    assert kinds["p_weight"] == ("parameter", "weight")
    assert kinds["x"] == ("user_input", 0)
    assert g.ops == [
        "aten.pow.Tensor_Scalar",
        "aten.mean.dim",
        "aten.add.Tensor",
        "aten.rsqrt.default",
        "aten.mul.Tensor",
        "aten.mul.Tensor",
    ]
    assert g.forward_params == ["x"] and g.init_params == ["dim", "eps"]
    assert g.outputs == [{"ref": g.nodes[-1].name}] and not g.output_is_tuple


def test_capture_keeps_batch_dims_symbolic_and_records_strides(rmsnorm_graph) -> None:  # type: ignore[no-untyped-def]
    x = next(i for i in rmsnorm_graph.inputs if i.name == "x")
    assert x.meta is not None
    assert x.meta.shape == [2, 5, 48] and x.meta.stride == [240, 48, 1] and x.meta.dtype == "float32"
    assert all(isinstance(s, str) for s in x.meta.sym_shape[:2])  # batch dims stay symbolic
    assert x.meta.sym_shape[2] == 48  # tied to the weight's size: specialised
    mean = rmsnorm_graph.nodes[1]
    assert mean.args[1:] == [[-1], True] and mean.meta.sym_shape[-1] == 1


def test_capture_adds_an_alternate_graph_for_each_other_input_rank(rmsnorm_graph, graphs) -> None:  # type: ignore[no-untyped-def]
    # rmsnorm's test sets are 3-D fp32 like get_inputs(); the softmax example also tests a 3-D input
    assert rmsnorm_graph.alternates == []
    g = graphs[1]
    ranks = sorted(len(a.inputs[0].meta.shape) for a in g.alternates if a.inputs[0].meta)
    assert ranks == [3] and len(g.inputs[0].meta.shape) == 2


def test_capture_reports_tuple_outputs_and_sparse_ops(graphs: list[OpGraph]) -> None:
    g = graphs[2]
    assert g.output_is_tuple and len(g.outputs) == 4
    e = graphs[3]
    assert any(op.startswith("aten._embedding_bag") for op in e.ops)
    assert [i.meta.dtype for i in e.inputs if i.kind == "user_input"] == ["int64", "int64"]


def test_capture_fails_with_one_line_for_a_broken_problem(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import torch\nclass Model(torch.nn.Module):\n    pass\ndef get_inputs():\n    return []\n"
    )
    broken = tmp_path / "broken.py"
    broken.write_text(
        "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        raise RuntimeError('boom')\n"
        "def get_inputs():\n    return [torch.ones(2)]\ndef get_init_inputs():\n    return []\n"
    )
    good = PROBLEMS / "softmax_temp.py"
    results = capture_graphs([bad, broken, tmp_path / "missing.py", good])
    assert isinstance(results[0], CaptureError) and "lacks get_init_inputs" in str(results[0])
    assert isinstance(results[1], CaptureError) and "boom" in str(results[1]) and "\n" not in str(results[1])
    assert isinstance(results[2], CaptureError) and "not found" in str(results[2])
    assert isinstance(results[3], OpGraph)  # one bad problem does not spoil the others
    with pytest.raises(CaptureError, match="not found"):
        capture_graph(tmp_path / "missing.py")


def test_capture_runs_in_a_child_and_never_imports_torch_in_the_caller() -> None:
    code = (
        "import sys; from pathlib import Path; from kernelevolve.search.capture import capture_graph; "
        f"g = capture_graph(Path({str(PROBLEMS / 'softmax_temp.py')!r})); "
        "print(g.method, [n.op for n in g.nodes], 'torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "export-dynamic ['aten.div.Tensor', 'aten._softmax.default'] False", (
        out.stderr
    )
