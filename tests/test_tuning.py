"""The tuning operator: finds tunables in any Triton file and rewrites only their literals."""

from __future__ import annotations

import ast
import difflib
import re
import threading
from pathlib import Path

from kernelevolve.search.operators.base import NodeContext, NodeView
from kernelevolve.search.operators.tuning import Move, TuningOperator, apply, find_sites
from kernelevolve.search.problem import ProblemSpec, TensorSpec, source_hash
from kernelevolve.search.results import EvalResult, Stage, Verdict

DATA = Path(__file__).parent / "data" / "tuning"
VECTOR_ADD = (DATA / "vector_add.py").read_text()
MATMUL = (DATA / "matmul_autotune.py").read_text()


def context(
    source: str, *, numel: int = 1 << 16, result: EvalResult | None = None, **kw: object
) -> NodeContext:
    spec = ProblemSpec(
        path=Path("p.py"), name="p", source="", source_hash="0", inputs=[TensorSpec((numel,), "float32")]
    )
    parent = NodeView(candidate_id=1, source=source, operator="seed", result=result, fitness=1.0)
    return NodeContext(spec=spec, parent=parent, **kw)  # type: ignore[arg-type]


def changed_lines(before: str, after: str) -> list[str]:
    return [
        line
        for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]


def test_finds_launch_constants_and_skips_semantic_constexprs() -> None:
    sites = {(s.name, s.value) for s in find_sites(VECTOR_ADD)}
    assert sites == {("BLOCK_SIZE", 256), ("num_warps", 4)}  # ACTIVATION=0 is not a knob


def test_finds_autotune_config_entries_positional_and_local_constants() -> None:
    sites = [(s.name, s.value, s.group.split(":")[0]) for s in find_sites(MATMUL)]
    config = [(n, v) for n, v, g in sites if g == "config"]
    assert config == [
        ("BLOCK_M", 64),
        ("BLOCK_N", 64),
        ("BLOCK_K", 32),
        ("GROUP_SIZE_M", 8),
        ("num_warps", 4),
        ("num_stages", 3),
    ]
    launch = sorted((n, v) for n, v, g in sites if g == "launch")
    # `tile = 64` passed positionally as BLOCK; an autotuned kernel never gets num_warps at launch.
    assert launch == [("BLOCK", 64), ("num_stages", 2), ("num_warps", 2), ("num_warps", 4)]


def test_rewrite_touches_only_the_changed_literal() -> None:
    site = next(s for s in find_sites(MATMUL) if s.name == "BLOCK_K")
    child = apply(MATMUL, Move(((site, 64),)))
    assert changed_lines(MATMUL, child) == [
        '-        triton.Config({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_SIZE_M": 8}, num_warps=4, num_stages=3),',
        '+        triton.Config({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64, "GROUP_SIZE_M": 8}, num_warps=4, num_stages=3),',
    ]


def test_rewrite_after_non_ascii_text_uses_byte_offsets() -> None:
    site = next(s for s in find_sites(MATMUL) if s.name == "BLOCK")
    child = apply(MATMUL, Move(((site, 128),)))
    assert changed_lines(MATMUL, child) == ["-        tile = 64", "+        tile = 128"]


def test_adds_num_warps_to_a_launch_without_it() -> None:
    site = next(s for s in find_sites(VECTOR_ADD) if s.name == "num_warps")
    child = apply(VECTOR_ADD, Move(((site, 8),)))
    assert changed_lines(VECTOR_ADD, child)[1].endswith("BLOCK_SIZE=BLOCK, ACTIVATION=0, num_warps=8)")
    trailing = next(s for s in find_sites(MATMUL) if s.insert == "num_warps=")
    assert "c.numel(),num_warps=2)" in apply(MATMUL, Move(((trailing, 2),)))
    ast.parse(apply(MATMUL, Move(((trailing, 2),))))


def test_proposals_are_distinct_new_and_within_valid_ranges() -> None:
    op = TuningOperator()
    known = frozenset({source_hash(VECTOR_ADD)})
    proposals = op.propose(context(MATMUL, known_hashes=known), 40, threading.Event())
    assert len(proposals) == 40
    hashes = {source_hash(p.source) for p in proposals}
    assert len(hashes) == 40 and source_hash(MATMUL) not in hashes
    for p in proposals:
        assert p.operator == "tuning" and p.note.startswith("tuning: ")
        for site in find_sites(p.source):
            if site.kind == "block":
                assert site.value & (site.value - 1) == 0 and 16 <= site.value <= 8192
            elif site.kind in ("num_warps", "group"):
                assert site.value in (1, 2, 4, 8, 16)
            else:
                assert 1 <= site.value <= 5


def test_skips_variants_already_in_the_run() -> None:
    op = TuningOperator()
    first = op.propose(context(VECTOR_ADD), 3, threading.Event())
    known = frozenset(source_hash(p.source) for p in first)
    again = op.propose(context(VECTOR_ADD, known_hashes=known), 3, threading.Event())
    assert not known & {source_hash(p.source) for p in again}


def test_blocks_do_not_grow_past_the_largest_input() -> None:
    proposals = TuningOperator().propose(context(VECTOR_ADD, numel=300), 100, threading.Event())
    blocks = {s.value for p in proposals for s in find_sites(p.source) if s.name == "BLOCK_SIZE"}
    # One step moves a value by at most 8x; 512 is the next power of two above 300.
    assert blocks == {32, 64, 128, 256, 512}


def test_out_of_resources_parent_shrinks_first() -> None:
    failed = EvalResult(Verdict.REJECTED, Stage.COMPILE, reason="triton OutOfResources: shared memory")
    proposals = TuningOperator().propose(context(MATMUL, result=failed), 6, threading.Event())
    assert len(proposals) == 6
    for p in proposals:
        ((old, new),) = re.findall(r"\w+ (\d+) -> (\d+)", p.note)
        assert int(new) < int(old), p.note


def test_no_kernel_or_no_parent_means_no_proposal() -> None:
    op = TuningOperator()
    assert op.propose(context("class ModelNew:\n    pass\n"), 4, threading.Event()) == []
    assert op.propose(context("def broken(:\n"), 4, threading.Event()) == []
    ctx = context(VECTOR_ADD)
    ctx.parent = None
    assert op.propose(ctx, 4, threading.Event()) == []


def test_finds_caps_and_branches_behind_a_computed_launch_value() -> None:
    source = (
        "import triton\nimport triton.language as tl\n\n\n@triton.jit\n"
        "def k(x, n, BLOCK: tl.constexpr):\n    pass\n\n\n"
        "def launch(x, n):\n"
        "    block = min(triton.next_power_of_2(n), 4096)\n"
        "    warps = 8 if block >= 2048 else 4\n"
        "    k[(1,)](x, n, BLOCK=block, num_warps=warps)\n"
    )
    sites = [(s.name, s.value) for s in find_sites(source)]
    assert sites == [("BLOCK", 4096), ("num_warps", 8), ("num_warps", 4)]  # not the 2048 threshold
    site = find_sites(source)[0]
    assert "block = min(triton.next_power_of_2(n), 1024)" in apply(source, Move(((site, 1024),)))
