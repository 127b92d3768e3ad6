"""Lowering captured graphs to candidates: each one matches its reference on every input set.

The graphs come from the real capture subprocess (one for all problems); the generated candidates
are our own code, run here in-process under the Triton interpreter against the torch reference on
get_inputs() (two seeds) and every get_test_inputs() set (odd sizes, other ranks and dtypes).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("TRITON_INTERPRET", "1")

import pytest
from kernelevolve.search.capture import OpGraph, capture_graphs
from kernelevolve.search.lowering.lower import lower
from kernelevolve.search.lowering.partition import uncovered_ops
from kernelevolve.search.lowering.pointwise_ops import LoweringError
from kernelevolve.search.lowering.variants import VARIANTS
from kernelevolve.search.operators.template import lower_candidate
from kernelevolve.search.static_check import check

PROBLEMS = Path(__file__).parent / "template_problems"
sys.path.insert(0, str(PROBLEMS))
from check import check_candidate  # noqa: E402

sys.path.remove(str(PROBLEMS))  # its problem files share names with the template samples

COVERED = [
    "rmsnorm",  # pow/mean/add/rsqrt/mul: one row kernel
    "softmax_temp",  # div + _softmax, 2-D with odd row lengths
    "fused_elementwise",  # broadcast DAG: gelu, where, sigmoid, silu, clamp, tanh, abs, exp, pow
    "gemm_epilogue",  # addmm + tanh-gelu * scale + residual in the GEMM store
    "layernorm_3d_linear",  # 3-D input through view/mm/view, relu, native_layer_norm
    "losses",  # mse, cross-entropy (log_softmax + gather + masked mean), BCE-with-logits
    "row_stats",  # max.dim values/indices, argmax, amin keepdim, log_softmax, sum over dim 0
    "embedding_bag",  # _embedding_bag mean with an empty bag
    "fm_interaction",  # DeepFM FM: reductions over the field dim then the embedding dim
    "bmm_scale",  # bmm against a transposed view, scale, sigmoid
    "jagged_to_padded",  # _jagged_to_padded_dense_forward, truncation and padding
    "jagged_roundtrip",  # jagged -> padded dense -> tanh -> jagged (both directions)
    "dot_interaction",  # DLRM: cat, bmm(T, T^T), triu_indices gather, cat
    "misc_reductions",  # normalize (vector_norm), var/std, logsumexp and log_softmax over dim 1, argmin
    "linear3d_gelu",  # 3-D nn.Linear: view -> addmm -> view -> gelu + residual, one GEMM kernel
    "batchnorm_mlp",  # linear + BatchNorm1d (eval) + relu in one GEMM kernel; skeleton constructor
    "activations",  # softplus, hardswish, elu, leaky_relu, mish, erf, sign, casts, (C, 1, 1) broadcast
]


@pytest.fixture(scope="module")
def graphs() -> dict[str, OpGraph]:
    names = [*COVERED, "uncovered_ops"]
    results = capture_graphs([PROBLEMS / f"{n}.py" for n in names])
    out: dict[str, OpGraph] = {}
    for name, result in zip(names, results, strict=True):
        assert isinstance(result, OpGraph), f"{name}: {result}"
        out[name] = result
    return out


@pytest.mark.parametrize("name", COVERED)
def test_lowered_candidate_matches_reference_on_every_input_set(
    name: str, graphs: dict[str, OpGraph], tmp_path: Path
) -> None:
    path = PROBLEMS / f"{name}.py"
    assert uncovered_ops(graphs[name]) == []
    source, violations = lower_candidate(graphs[name], path.read_text(), VARIANTS[0], name)
    assert violations == []
    assert check_candidate(path, source, tmp_path) >= 2


@pytest.mark.parametrize("variant", VARIANTS[1:4], ids=lambda v: v.name)
def test_other_launch_variants_are_also_correct(variant, graphs: dict[str, OpGraph], tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    for name in ("rmsnorm", "gemm_epilogue", "losses"):
        path = PROBLEMS / f"{name}.py"
        source, violations = lower_candidate(graphs[name], path.read_text(), variant, name)
        assert violations == [], (name, violations)
        assert check_candidate(path, source, tmp_path) >= 2


def test_variants_give_distinct_sources_with_literal_tunables(graphs: dict[str, OpGraph]) -> None:
    path = PROBLEMS / "gemm_epilogue.py"
    sources = [lower(graphs["gemm_epilogue"], path.read_text(), v) for v in VARIANTS]
    assert len(set(sources)) == len(VARIANTS)
    assert "BLOCK_M=64, BLOCK_N=64, BLOCK_K=32" in sources[0] and "num_warps=4" in sources[0]


def test_fused_groups_become_single_kernels(graphs: dict[str, OpGraph]) -> None:
    src = lower(graphs["rmsnorm"], (PROBLEMS / "rmsnorm.py").read_text(), VARIANTS[0])
    assert src.count("@triton.jit") == 1  # the whole RMSNorm is one row kernel
    src = lower(graphs["gemm_epilogue"], (PROBLEMS / "gemm_epilogue.py").read_text(), VARIANTS[0])
    assert src.count("@triton.jit") == 1  # bias, gelu, scale and residual ride in the GEMM store
    assert 'input_precision="ieee"' in src and "IEEE=True" in src


def test_gemm_epilogue_fuses_through_the_m_split_view_of_a_3d_linear(graphs: dict[str, OpGraph]) -> None:
    g = graphs["linear3d_gelu"]
    main = OpGraph(**{**g.__dict__, "alternates": []})
    src = lower(main, (PROBLEMS / "linear3d_gelu.py").read_text(), VARIANTS[0])
    assert src.count("@triton.jit") == 1 and "gsize1" in src and "tl.erf" in src


def test_batch_norm_folds_into_the_gemm_epilogue(graphs: dict[str, OpGraph]) -> None:
    source, _ = lower_candidate(
        graphs["batchnorm_mlp"], (PROBLEMS / "batchnorm_mlp.py").read_text(), VARIANTS[0], "bn"
    )
    assert source.count("@triton.jit") == 1 and "tl.rsqrt" in source
    assert "self.bn.running_mean = nn.Buffer(torch.empty((20,)" in source  # skeleton: the copy calls uniform_


def test_copied_constructor_keeps_parameter_names(graphs: dict[str, OpGraph]) -> None:
    src = lower(graphs["gemm_epilogue"], (PROBLEMS / "gemm_epilogue.py").read_text(), VARIANTS[0])
    assert "self.fc = nn.Linear(in_features, out_features)" in src
    src = lower(graphs["rmsnorm"], (PROBLEMS / "rmsnorm.py").read_text(), VARIANTS[0])
    assert "nn.init.normal_(torch.empty(dim))" in src  # torch.randn, drawn the same way


def test_skeleton_constructor_allocates_the_same_state(graphs: dict[str, OpGraph], tmp_path: Path) -> None:
    path = PROBLEMS / "layernorm_3d_linear.py"
    src = lower(graphs["layernorm_3d_linear"], path.read_text(), VARIANTS[0], init="skeleton")
    assert "nn.Linear" not in src and "self.proj = nn.Module()" in src
    assert check(src) == []
    check_candidate(path, src, tmp_path)


def test_dlrm_triangle_gather_never_materialises_triu_indices(graphs: dict[str, OpGraph]) -> None:
    src = lower(graphs["dot_interaction"], (PROBLEMS / "dot_interaction.py").read_text(), VARIANTS[0])
    assert "triu_indices" not in src.split("class ModelNew")[1]  # the pairs are computed in the kernel
    assert "triu_pack_kernel[" in src and src.count("cat_copy_kernel[") == 4


def test_uncovered_ops_are_named_and_lowering_refuses(graphs: dict[str, OpGraph]) -> None:
    g = graphs["uncovered_ops"]
    assert uncovered_ops(g) == ["aten.cumsum.default", "aten.sort.default"]
    with pytest.raises(LoweringError, match="cumsum"):
        lower(g, (PROBLEMS / "uncovered_ops.py").read_text(), VARIANTS[0])
