"""Deriving a KernelBench problem from a selection: targets, input sources in order, advice."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from kernelevolve.search.problem import check_problem_source
from kernelevolve.search.spec_from_selection import (
    SpecUnavailable,
    derive_problem,
    find_target,
    inputs_from_comment,
    parse_source,
    write_problem,
)

USER_FILE = textwrap.dedent(
    '''\
    """A user's model file: a training script with a couple of ops worth a kernel."""
    import torch
    import torch.nn as nn

    EPS = 1e-6
    DEVICE = torch.device("cpu")  # has a call: dropped from the derived problem


    # kernelevolve: inputs=float32[4, 32]
    class RowScale(nn.Module):
        def __init__(self, dim=32):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(dim))

        def forward(self, x):
            return x * self.weight + EPS


    class NeedsArgs(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.dim = dim

        def forward(self, x):
            return x.sum(-1)


    def gelu_residual(x, r):
        # kernelevolve: inputs=[torch.randn(3, 5), torch.randn(3, 5)]
        return torch.nn.functional.gelu(x) + r


    print("this top-level statement must not run in the problem")
    '''
)


def derive(source: str, line: int, tmp_path: Path, **kw):  # type: ignore[no-untyped-def]
    path = tmp_path / "model.py"
    path.write_text(source)
    return derive_problem(
        source, line=line, out_dir=tmp_path / "problems", file_path=path, display_name="model.py", **kw
    )


def line_of(source: str, needle: str) -> int:
    return next(i for i, text in enumerate(source.splitlines()) if needle in text)


def test_selection_inside_a_method_targets_the_enclosing_module(tmp_path: Path) -> None:
    tree = parse_source(USER_FILE, "model.py")
    target = find_target(tree, USER_FILE.splitlines(), line_of(USER_FILE, "return x * self.weight"))
    assert target is not None
    assert (target.kind, target.qualname) == ("module", "RowScale")
    assert target.def_line == line_of(USER_FILE, "class RowScale")


def test_selection_outside_any_op_says_where_to_put_the_cursor(tmp_path: Path) -> None:
    with pytest.raises(SpecUnavailable, match="inside an nn.Module class or a top-level function"):
        derive(USER_FILE, line_of(USER_FILE, "EPS = 1e-6"), tmp_path)


def test_comment_inputs_give_a_valid_problem_file(tmp_path: Path) -> None:
    problem = derive(USER_FILE, line_of(USER_FILE, "self.weight = nn"), tmp_path)
    assert problem.inputs_from == "comment"
    assert problem.path == tmp_path / "problems" / "model__RowScale.py"
    check_problem_source(problem.source, str(problem.path))
    assert "torch.randn((4, 32), dtype=torch.float32)" in problem.source
    assert "this top-level statement" not in problem.source
    assert "DEVICE" not in problem.source


def test_missing_inputs_name_all_three_ways_to_add_them(tmp_path: Path) -> None:
    source = USER_FILE.replace("# kernelevolve: inputs=float32[4, 32]\n", "")
    with pytest.raises(SpecUnavailable) as err:
        derive(source, line_of(source, "class RowScale"), tmp_path)
    message = str(err.value)
    assert "get_inputs()" in message and "kernelevolve trace" in message and "inputs=" in message


def test_constructor_arguments_are_required_when_init_needs_them(tmp_path: Path) -> None:
    source = USER_FILE.replace("class NeedsArgs", "# kernelevolve: inputs=float32[2, 3]\nclass NeedsArgs")
    with pytest.raises(SpecUnavailable, match="init="):
        derive(source, line_of(source, "return x.sum(-1)"), tmp_path)
    fixed = source.replace("class NeedsArgs", "# kernelevolve: init=[3]\nclass NeedsArgs")
    problem = derive(fixed, line_of(fixed, "return x.sum(-1)"), tmp_path)
    assert "return [3]" in problem.source


def test_get_inputs_in_the_file_wins_over_trace_and_comment(tmp_path: Path) -> None:
    source = USER_FILE + "\n\ndef get_inputs():\n    return [torch.randn(2, 32)]\n"
    problem = derive(source, line_of(source, "class RowScale"), tmp_path, traced=lambda q: [])
    assert problem.inputs_from == "get_inputs()"
    assert problem.source.count("def get_inputs") == 1


def test_traced_inputs_win_over_the_comment_and_keep_value_ranges(tmp_path: Path) -> None:
    records = [
        {
            "kind": "tensor",
            "shape": [6, 32],
            "dtype": "float32",
            "min": 0.5,
            "max": 2.0,
            "mean": 1.0,
            "std": 0.25,
        }
    ]
    seen: list[str] = []

    def traced(qualname: str):  # type: ignore[no-untyped-def]
        seen.append(qualname)
        return records if qualname == "RowScale.forward" else None

    problem = derive(USER_FILE, line_of(USER_FILE, "class RowScale"), tmp_path, traced=traced)
    assert problem.inputs_from == "trace"
    assert "RowScale.forward" in seen
    assert "torch.randn((6, 32), dtype=torch.float32) * 0.25 + 1.0).clamp(0.5, 2.0)" in problem.source


def test_integer_inputs_are_marked_and_keep_their_dtype() -> None:
    code, ints = inputs_from_comment("float32[4, 8], int64[4]", "f.py")
    assert ints == [1]
    assert "torch.randint(0, 16, (4,), dtype=torch.int64)" in code


def test_unknown_dtype_in_comment_is_one_clear_error() -> None:
    with pytest.raises(SpecUnavailable, match="unknown dtype 'floaty'"):
        inputs_from_comment("floaty[4]", "f.py")


def test_problem_file_is_used_directly_unless_the_buffer_is_unsaved(tmp_path: Path) -> None:
    source = "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return x\n"
    source += "def get_inputs():\n    return [torch.randn(4)]\ndef get_init_inputs():\n    return []\n"
    problem = derive(source, 0, tmp_path)
    assert problem.path == tmp_path / "model.py"
    assert write_problem(problem) == tmp_path / "model.py"
    edited = source.replace("return x\n", "return x + 1\n")
    unsaved = derive_problem(
        edited,
        line=2,
        out_dir=tmp_path / "problems",
        file_path=tmp_path / "model.py",
        display_name="model.py",
    )
    assert unsaved.path == tmp_path / "problems" / "model__Model.py"
    assert (tmp_path / "model.py").read_text() == source


def test_untitled_buffer_derives_without_a_file(tmp_path: Path) -> None:
    problem = derive_problem(
        USER_FILE,
        line=line_of(USER_FILE, "gelu(x)"),
        out_dir=tmp_path,
        file_path=None,
        display_name="Untitled-1",
    )
    assert problem.path == tmp_path / "Untitled_1__gelu_residual.py"
    assert "_ke_sys.path" not in problem.source


def test_derived_problems_run_in_a_fresh_interpreter(tmp_path: Path) -> None:
    """The generated files import and produce an output: the engine can run them unchanged."""
    module = derive(USER_FILE, line_of(USER_FILE, "class RowScale"), tmp_path)
    function = derive(USER_FILE, line_of(USER_FILE, "gelu(x)"), tmp_path)
    paths = [str(write_problem(module)), str(write_problem(function))]
    script = textwrap.dedent(
        """
        import importlib.util, json, sys
        out = []
        for path in sys.argv[1:]:
            spec = importlib.util.spec_from_file_location("p", path)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            y = mod.Model(*mod.get_init_inputs())(*mod.get_inputs())
            out.append(list(y.shape))
        print(json.dumps(out))
        """
    )
    proc = subprocess.run([sys.executable, "-c", script, *paths], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == [[4, 32], [3, 5]]
    assert "must not run" not in proc.stdout


def test_model_is_a_renamed_copy_so_tools_can_read_its_init_and_forward(tmp_path: Path) -> None:
    source = USER_FILE.replace(
        "super().__init__()\n        self.weight", "super(RowScale, self).__init__()\n        self.weight"
    )
    problem = derive(source, line_of(source, "class RowScale"), tmp_path)
    tree = parse_source(problem.source, "p.py")
    model = next(n for n in tree.body if getattr(n, "name", "") == "Model")
    assert {b.name for b in model.body if hasattr(b, "name")} == {"__init__", "forward"}  # type: ignore[attr-defined]
    assert "super(Model, self).__init__()" in problem.source


def test_function_op_keeps_its_parameter_names(tmp_path: Path) -> None:
    problem = derive(USER_FILE, line_of(USER_FILE, "gelu(x)"), tmp_path)
    assert "    def forward(self, x, r):\n        return gelu_residual(x, r)" in problem.source
