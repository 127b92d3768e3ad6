from __future__ import annotations

import pytest
from kernelevolve.knowledge.hardware import (
    HARDWARE_DIR,
    HardwareError,
    list_hardware,
    load_hardware,
    match_device,
)

EXPECTED = {"nvidia-h200", "nvidia-h100", "nvidia-a100", "nvidia-b200", "amd-mi300x"}


def test_every_expected_entry_exists_and_loads_with_sane_numbers() -> None:
    assert set(list_hardware()) >= EXPECTED
    for name in list_hardware():
        hw = load_hardware(name)
        assert hw.name == name
        assert hw.sm_count > 0 and hw.hbm_gbps > 500 and hw.l2_bytes > 1 << 20
        assert hw.l2_gbps > hw.hbm_gbps  # L2 is faster than HBM on every part we list
        assert hw.max_warps_per_sm >= 32 and hw.smem_per_sm >= 64 * 1024
        assert {"fp32"} <= set(hw.fma_tflops) and {"tf32", "fp16", "bf16"} <= set(hw.tensor_tflops)
        assert hw.tensor_tflops["bf16"] > hw.tensor_tflops["tf32"] > hw.fma_tflops["fp32"]
        assert hw.sources, f"{name} names no source"


def test_measured_ceilings_never_exceed_the_datasheet_peaks() -> None:
    for name in list_hardware():
        hw = load_hardware(name)
        assert hw.bandwidth_gbps() <= hw.peak_bandwidth_gbps()
        for dtype, rate in hw.measured_tensor_tflops.items():
            assert rate <= hw.tensor_tflops[dtype], f"{name} {dtype}"


def test_h200_facts_match_datasheet_and_workplace_measurements() -> None:
    hw = load_hardware("nvidia-h200")
    assert hw.sm_count == 132
    assert hw.hbm_gbps == 4800.0
    assert hw.measured_copy_gbps is not None and 4000 <= hw.measured_copy_gbps <= 4800
    assert 980 <= hw.tensor_tflops["bf16"] <= 1000
    assert 760 <= hw.measured_tensor_tflops["bf16"] <= 800
    assert hw.bandwidth_gbps() == hw.measured_copy_gbps  # measured ceiling preferred
    assert hw.peak_bandwidth_gbps() == 4800.0
    assert hw.matmul_tflops("torch.bfloat16") == hw.measured_tensor_tflops["bf16"]
    assert hw.peak_matmul_tflops("bfloat16") == hw.tensor_tflops["bf16"]
    assert hw.peak_matmul_tflops("float32") == hw.tensor_tflops["tf32"]  # fp32 dots run as tf32
    assert hw.matmul_tflops("float32") == hw.measured_tensor_tflops["tf32"]


def test_match_device_maps_cuda_names_to_entries() -> None:
    h200 = match_device("NVIDIA H200")
    assert h200 is not None and h200.name == "nvidia-h200"
    h100 = match_device("NVIDIA H100 80GB HBM3")
    assert h100 is not None and h100.name == "nvidia-h100"
    a100 = match_device("NVIDIA A100-SXM4-80GB")
    assert a100 is not None and a100.name == "nvidia-a100"
    assert match_device("NVIDIA H100 PCIe") is None  # a different card: not silently priced as SXM
    assert match_device("NVIDIA GB200") is None
    assert match_device("NVIDIA GeForce RTX 4090") is None


def test_unknown_hardware_is_one_clear_error() -> None:
    with pytest.raises(HardwareError, match="unknown hardware 'nvidia-h999'.*nvidia-h200"):
        load_hardware("nvidia-h999")


def test_missing_field_is_named(tmp_path, monkeypatch) -> None:
    import kernelevolve.knowledge.hardware as hardware

    text = (HARDWARE_DIR / "nvidia-h100.toml").read_text().replace("sm_count = 132", "")
    (tmp_path / "broken.toml").write_text(text)
    monkeypatch.setattr(hardware, "HARDWARE_DIR", tmp_path)
    with pytest.raises(HardwareError, match="broken.toml: missing sm_count"):
        load_hardware("broken")
