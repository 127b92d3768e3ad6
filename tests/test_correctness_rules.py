"""The output comparison rules, in-process on small tensors (our own code, no candidate runs here)."""

from __future__ import annotations

import torch
from kernelevolve.search.correctness import compare_outputs, output_storages, tolerance
from kernelevolve.search.ghost import fill_poison
from kernelevolve.search.inputs import mutation, same_bits


def test_default_tolerances_follow_the_dtype() -> None:
    assert tolerance(torch.float32, None) == 1e-4
    assert tolerance(torch.float16, None) == 1e-2
    assert tolerance(torch.bfloat16, None) == 1e-2


def test_problem_tolerance_overrides_by_float_or_by_dtype_name() -> None:
    assert tolerance(torch.float32, 5e-3) == 5e-3
    assert tolerance(torch.float16, {"float16": 3e-2}) == 3e-2
    assert tolerance(torch.float32, {"float16": 3e-2}) == 1e-4


def test_fp32_error_just_inside_tolerance_passes_and_just_outside_fails() -> None:
    ref = torch.ones(8)
    assert compare_outputs(ref + 1e-4, ref).passed  # atol + rtol * 1 = 2e-4
    failed = compare_outputs(ref + 3e-4, ref)
    assert not failed.passed
    assert "outside atol=0.0001 rtol=0.0001" in (failed.reason or "")
    assert failed.max_abs_err is not None and abs(failed.max_abs_err - 3e-4) < 1e-6


def test_fp16_uses_the_looser_tolerance() -> None:
    ref = torch.ones(8, dtype=torch.float16)
    assert compare_outputs(ref + 0.01, ref).passed
    assert not compare_outputs(ref + 0.05, ref).passed


def test_problem_atol_rtol_are_applied() -> None:
    ref = torch.ones(4)
    assert not compare_outputs(ref + 0.05, ref).passed
    assert compare_outputs(ref + 0.05, ref, atol=0.1, rtol=0.0).passed


def test_nan_where_the_reference_has_none_never_passes_even_with_huge_tolerance() -> None:
    ref = torch.zeros(4)
    out = ref.clone()
    out[2] = float("nan")
    result = compare_outputs(out, ref, atol=1e9, rtol=1e9)
    assert not result.passed
    assert "1 NaN value(s) where the reference has none" in (result.reason or "")


def test_nan_in_the_same_place_as_the_reference_passes() -> None:
    ref = torch.tensor([1.0, float("nan"), 3.0])
    assert compare_outputs(ref.clone(), ref).passed
    assert not compare_outputs(torch.tensor([1.0, 2.0, 3.0]), ref).passed


def test_inf_must_match_exactly() -> None:
    ref = torch.tensor([1.0, float("inf")])
    assert compare_outputs(ref.clone(), ref).passed
    assert not compare_outputs(torch.tensor([1.0, float("-inf")]), ref).passed
    assert not compare_outputs(torch.tensor([float("inf"), float("inf")]), ref).passed


def test_integer_and_bool_outputs_must_match_exactly() -> None:
    ref = torch.tensor([1, 2, 3])
    assert compare_outputs(ref.clone(), ref).passed
    assert not compare_outputs(torch.tensor([1, 2, 4]), ref, atol=10.0, rtol=10.0).passed
    flags = torch.tensor([True, False])
    assert not compare_outputs(torch.tensor([True, True]), flags).passed


def test_shape_dtype_and_device_mismatches_are_named() -> None:
    ref = torch.zeros(2, 3)
    assert "shape [3, 2], expected [2, 3]" in (compare_outputs(torch.zeros(3, 2), ref).reason or "")
    assert "dtype float16, expected float32" in (compare_outputs(ref.half(), ref).reason or "")
    meta = torch.empty(2, 3, device="meta")
    assert not compare_outputs(meta, ref).passed


def test_precision_downgrade_is_rejected_by_dtype() -> None:
    ref = torch.randn(16)
    assert not compare_outputs(ref.to(torch.bfloat16), ref).passed


def test_tensor_subclass_is_rejected_even_with_equal_values() -> None:
    class Lazy(torch.Tensor):
        pass

    ref = torch.randn(4)
    out = ref.clone().as_subclass(Lazy)
    result = compare_outputs(out, ref)
    assert not result.passed
    assert "expected a plain torch.Tensor, got" in (result.reason or "")
    assert "subclass" in (result.reason or "")


def test_parameter_output_is_rejected_as_a_subclass() -> None:
    ref = torch.randn(4)
    assert not compare_outputs(torch.nn.Parameter(ref.clone()), ref).passed


def test_sparse_output_is_rejected() -> None:
    ref = torch.eye(3)
    assert "strided" in (compare_outputs(ref.to_sparse(), ref).reason or "")


def test_tuple_outputs_are_compared_element_wise_and_length_checked() -> None:
    a, b = torch.randn(3), torch.randn(2)
    assert compare_outputs((a.clone(), b.clone()), (a, b)).passed
    wrong = compare_outputs((a.clone(), b + 1), (a, b))
    assert not wrong.passed and "output[1]" in (wrong.reason or "")
    assert not compare_outputs((a.clone(),), (a, b)).passed
    assert not compare_outputs(a.clone(), (a, b)).passed


def test_non_contiguous_output_with_right_values_passes() -> None:
    ref = torch.randn(4, 3)
    out = torch.empty(3, 4).t()  # column-major view
    out.copy_(ref)
    assert not out.is_contiguous()
    assert compare_outputs(out, ref).passed


def test_empty_outputs_pass_when_shapes_match() -> None:
    assert compare_outputs(torch.empty(0, 3), torch.empty(0, 3)).passed


def test_input_mutation_is_detected_even_by_one_bit() -> None:
    pristine = [torch.ones(4), 3]
    after = [torch.ones(4), 3]
    assert mutation(pristine, after) is None
    after[0][1] = 1.0000001
    assert mutation(pristine, after) == "input[0] was modified in place"
    assert mutation(pristine, [torch.ones(4), 4]) == "input[1] changed from 3 to 4"


def test_same_bits_distinguishes_negative_zero() -> None:
    assert same_bits(torch.tensor([0.0]), torch.tensor([0.0]))
    assert not same_bits(torch.tensor([0.0]), torch.tensor([-0.0]))


def test_output_storages_detect_a_buffer_returned_twice() -> None:
    buf = torch.zeros(4)
    assert output_storages(buf) & output_storages(buf[:2])
    assert not output_storages(buf) & output_storages(torch.zeros(4))


def test_poison_fills_floats_with_nan_and_integers_with_a_sentinel() -> None:
    assert torch.isnan(fill_poison(torch.zeros(3))).all()
    ints = fill_poison(torch.zeros(3, dtype=torch.int32))
    assert (ints == int.from_bytes(b"\xa5" * 4, "little", signed=True)).all()
