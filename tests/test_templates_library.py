"""Every sample in knowledge/code_samples runs, as shipped, and matches PyTorch on several shapes.

Runs the samples' own launchers under the Triton interpreter (TRITON_INTERPRET=1, set before
triton is imported: this test module is our code, the samples are our library, not candidates).
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys

os.environ.setdefault("TRITON_INTERPRET", "1")

import pytest
import torch
import torch.nn.functional as F
from kernelevolve.knowledge import templates

sys.path.insert(0, str(templates.SAMPLES_DIR))


def sample(name: str):  # type: ignore[no-untyped-def]
    """Load a sample by path under a unique module name (tests/template_problems has namesakes)."""
    module_name = f"kernelevolve_sample_{name}"
    if module_name not in sys.modules:
        spec = importlib.util.spec_from_file_location(module_name, templates.SAMPLES_DIR / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        spec.loader.exec_module(module)
    return sys.modules[module_name]


SHAPES = [(4, 64), (3, 37), (1, 1), (5, 130)]


@pytest.mark.parametrize("m,n", SHAPES)
def test_pointwise_sample_matches_gelu_residual(m: int, n: int) -> None:
    torch.manual_seed(m * n)
    x, res = torch.randn(m, n), torch.randn(m, n)
    scale, bias = torch.randn(n), torch.randn(n)
    want = F.gelu(x * scale + bias) + res
    torch.testing.assert_close(sample("pointwise").fused_gelu_residual(x, scale, bias, res), want)


@pytest.mark.parametrize("m,n", SHAPES)
def test_row_reduce_sample_matches_rms_norm(m: int, n: int) -> None:
    torch.manual_seed(m + n)
    x, w = torch.randn(m, n), torch.randn(n)
    want = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w
    torch.testing.assert_close(sample("row_reduce").rms_norm(x, w), want, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("m,n", SHAPES)
def test_flat_reduce_sample_matches_mse_loss(m: int, n: int) -> None:
    torch.manual_seed(m + 2 * n)
    x, y = torch.randn(m, n), torch.randn(m, n)
    torch.testing.assert_close(sample("flat_reduce").mse_loss(x, y), F.mse_loss(x, y), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("m,k,n", [(16, 32, 16), (5, 7, 9), (33, 65, 17)])
def test_gemm_sample_matches_linear_relu(m: int, k: int, n: int) -> None:
    torch.manual_seed(m * k + n)
    x, w, b = torch.randn(m, k), torch.randn(n, k), torch.randn(n)
    torch.testing.assert_close(
        sample("gemm_epilogue").linear_relu(x, w, b), F.relu(F.linear(x, w, b)), atol=1e-4, rtol=1e-4
    )


@pytest.mark.parametrize("mode,name", [(0, "sum"), (1, "mean"), (2, "max")])
def test_embedding_bag_sample_matches_torch_with_empty_bag(mode: int, name: str) -> None:
    torch.manual_seed(mode)
    weight = torch.randn(20, 24)
    indices = torch.randint(0, 20, (11,))
    offsets = torch.tensor([0, 3, 3, 7, 10])  # bag 1 is empty
    want = F.embedding_bag(indices, weight, offsets, mode=name)
    torch.testing.assert_close(
        sample("embedding_bag").embedding_bag(weight, indices, offsets, mode=mode), want
    )


def test_embedding_bag_sample_handles_weights_last_offset_and_padding() -> None:
    torch.manual_seed(5)
    weight = torch.randn(10, 70)
    indices = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9])
    offsets = torch.tensor([0, 4, 8])
    psw = torch.rand(8)
    got = sample("embedding_bag").embedding_bag(weight, indices, offsets, 0, psw, include_last_offset=True)
    want = F.embedding_bag(
        indices, weight, offsets, mode="sum", per_sample_weights=psw, include_last_offset=True
    )
    torch.testing.assert_close(got, want)
    got = sample("embedding_bag").embedding_bag(weight, indices, offsets, 1, padding_idx=4)
    torch.testing.assert_close(got, F.embedding_bag(indices, weight, offsets, mode="mean", padding_idx=4))


@pytest.mark.parametrize("shape", [(7,), (3, 5)])
def test_embedding_sample_matches_lookup(shape: tuple[int, ...]) -> None:
    weight = torch.randn(12, 33)
    idx = torch.randint(0, 12, shape)
    torch.testing.assert_close(sample("embedding").embedding(weight, idx), F.embedding(idx, weight))


@pytest.mark.parametrize("max_len", [1, 4, 9])
def test_jagged_to_padded_dense_sample_truncates_and_pads(max_len: int) -> None:
    values = torch.randn(12, 5)
    offsets = torch.tensor([0, 3, 3, 10, 12])  # an empty segment and one longer than max_len
    want = torch.ops.aten._jagged_to_padded_dense_forward(values, [offsets], [max_len], -1.5)
    got = sample("jagged_to_padded_dense").jagged_to_padded_dense(values, offsets, max_len, -1.5)
    torch.testing.assert_close(got, want)


def test_every_manifest_entry_names_a_kernel_in_its_sample() -> None:
    entries = json.loads((templates.SAMPLES_DIR / "manifest.json").read_text())["templates"]
    assert len({e["name"] for e in entries}) == len(entries) == len(templates.manifest())
    for info in templates.manifest().values():
        assert info.path.is_file() and info.kernel in info.kernels
        for kernel in info.kernels:
            assert templates.function_source(info.name, kernel).startswith("@triton.jit")
        assert templates.slot_names(info.name, info.kernel) == info.slots


def test_rendering_replaces_slots_and_renames_the_kernel() -> None:
    text = templates.kernel_source("row_reduce", "row_kernel", "_k3", {"body": "y = x\n"})
    assert "def _k3(" in text and "row_kernel" not in text
    assert "tl.sum" not in text and "    y = x" in text
    with pytest.raises(templates.TemplateError):
        templates.kernel_source("row_reduce", "row_kernel", "_k", {"nope": ""})


@pytest.mark.parametrize("batch,n,d", [(3, 6, 16), (2, 27, 8), (1, 2, 5)])
def test_dot_interaction_sample_packs_the_upper_triangle_and_concatenates(batch: int, n: int, d: int) -> None:
    torch.manual_seed(n)
    dense, sparse = torch.randn(batch, d), torch.randn(batch, n - 1, d)
    t = torch.cat([dense.unsqueeze(1), sparse], dim=1)
    z = torch.bmm(t, t.transpose(1, 2))
    li, lj = torch.triu_indices(n, n, offset=1)
    want = torch.cat([dense, z[:, li, lj]], dim=1)
    torch.testing.assert_close(sample("dot_interaction").interaction_output(dense, z), want)


def test_padded_to_jagged_sample_inverts_the_padding() -> None:
    dense = torch.randn(4, 6, 5)
    offsets = torch.tensor([0, 3, 3, 9, 11])  # an empty segment and a full one
    want = torch.ops.aten._padded_dense_to_jagged_forward(dense, [offsets], 11)
    got = sample("jagged_to_padded_dense").padded_dense_to_jagged(dense, offsets, 11)
    torch.testing.assert_close(got, want)
