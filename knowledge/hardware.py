"""Hardware facts for the roofline floor and the modelled (CPU) timing.

One TOML file per device under ``knowledge/hardware/``; every number there names its source
(datasheet, whitepaper, or this workplace's own measurements with their date). Figures marked
ESTIMATE in a file have no datasheet value and are replaced by measurements as they come in.

Ceilings: ``bandwidth_gbps()`` and ``matmul_tflops()`` prefer a measured ceiling when the file has
one (what a real kernel can reach), else the datasheet figure. ``peak_bandwidth_gbps()`` and
``peak_matmul_tflops()`` always give the datasheet figure: the physical limit, used where a number
must be a true upper bound (the roofline floor check).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

HARDWARE_DIR = Path(__file__).resolve().parent / "hardware"

# Floating dtypes as torch names them -> the keys used in the TOML files.
_DTYPE_KEYS = {
    "float32": "fp32",
    "float": "fp32",
    "float16": "fp16",
    "half": "fp16",
    "bfloat16": "bf16",
    "float8_e4m3fn": "fp8",
    "float8_e5m2": "fp8",
    "float8_e4m3fnuz": "fp8",
    "float8_e5m2fnuz": "fp8",
}

_REQUIRED = (
    "name",
    "vendor",
    "arch",
    "sm_count",
    "hbm_gbps",
    "l2_bytes",
    "l2_gbps",
    "smem_per_sm",
    "regs_per_sm",
    "max_warps_per_sm",
    "launch_overhead_us",
    "fma_tflops",
    "tensor_tflops",
    "sources",
)


class HardwareError(ValueError):
    """A hardware entry is missing or malformed."""


@dataclass(frozen=True)
class HardwareSpec:
    name: str  # file stem, e.g. "nvidia-h200"
    vendor: str
    arch: str
    sm_count: int
    hbm_gbps: float  # datasheet HBM bandwidth, GB/s (1e9 bytes/s)
    l2_bytes: int
    l2_gbps: float  # estimate or measurement; no vendor publishes it
    smem_per_sm: int
    regs_per_sm: int
    max_warps_per_sm: int
    launch_overhead_us: float  # GPU-side time of a near-empty kernel launch
    fma_tflops: dict[str, float]  # CUDA-core (non-tensor) peak per dtype key: fp32, fp16, bf16
    tensor_tflops: dict[str, float]  # dense tensor-core peak per dtype key: tf32, fp16, bf16, fp8
    sources: tuple[str, ...]
    measured_copy_gbps: float | None = None  # device-to-device copy, bytes read + written
    measured_tensor_tflops: dict[str, float] = field(default_factory=dict)
    measured_date: str | None = None
    max_blocks_per_sm: int = 32
    device_names: tuple[str, ...] = ()  # substrings of the CUDA device name that identify it
    exclude_names: tuple[str, ...] = ()  # substrings that rule a device name out
    notes: tuple[str, ...] = ()

    # -- ceilings -----------------------------------------------------------------------------
    def bandwidth_gbps(self, measured: bool = True) -> float:
        """HBM bandwidth to price traffic with: the measured copy ceiling when known."""
        if measured and self.measured_copy_gbps:
            return self.measured_copy_gbps
        return self.hbm_gbps

    def peak_bandwidth_gbps(self) -> float:
        return self.hbm_gbps

    def matmul_tflops(self, dtype: str, measured: bool = True) -> float:
        """Tensor-core rate for a matmul whose operands have ``dtype`` (torch name or key).

        fp32 operands are priced at the tf32 rate (Triton's tl.dot and cuBLAS with TF32 allowed use
        it), which keeps a floor built on it a lower bound. Unknown dtypes get the fastest rate.
        """
        key = dtype_key(dtype)
        if key == "fp32":
            key = "tf32"
        if measured and key in self.measured_tensor_tflops:
            return self.measured_tensor_tflops[key]
        if key in self.tensor_tflops:
            return self.tensor_tflops[key]
        return max(self.tensor_tflops.values())

    def peak_matmul_tflops(self, dtype: str) -> float:
        return self.matmul_tflops(dtype, measured=False)

    def elementwise_tflops(self, dtype: str = "fp32") -> float:
        """CUDA-core rate (an FMA counts 2 FLOPs) for element-wise arithmetic."""
        key = dtype_key(dtype)
        return self.fma_tflops.get(key, self.fma_tflops.get("fp32", max(self.fma_tflops.values())))

    def ceiling_source(self) -> str:
        return "measured" if self.measured_copy_gbps else "datasheet"


def dtype_key(dtype: Any) -> str:
    """'torch.bfloat16' / torch.bfloat16 / 'bf16' -> 'bf16'."""
    text = str(dtype).removeprefix("torch.")
    return _DTYPE_KEYS.get(text, text)


def load_hardware(name: str) -> HardwareSpec:
    """Load ``knowledge/hardware/<name>.toml``; raises HardwareError naming what is wrong."""
    path = HARDWARE_DIR / f"{name}.toml"
    if not path.is_file():
        known = ", ".join(list_hardware()) or "none"
        raise HardwareError(f"unknown hardware {name!r}; known: {known}")
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise HardwareError(f"{path.name}: not valid TOML: {exc}") from exc
    return _from_dict(data, path.name)


def list_hardware() -> list[str]:
    return sorted(p.stem for p in HARDWARE_DIR.glob("*.toml"))


def match_device(device_name: str) -> HardwareSpec | None:
    """The entry describing a CUDA device name such as 'NVIDIA H200', or None if none does."""
    lowered = device_name.lower()
    for name in list_hardware():
        spec = load_hardware(name)
        if any(s.lower() in lowered for s in spec.exclude_names):
            continue
        if any(s.lower() in lowered for s in spec.device_names):
            return spec
    return None


def _from_dict(data: dict[str, Any], where: str) -> HardwareSpec:
    missing = [k for k in _REQUIRED if k not in data]
    if missing:
        raise HardwareError(f"{where}: missing {', '.join(missing)}")
    try:
        return HardwareSpec(
            name=str(data["name"]),
            vendor=str(data["vendor"]),
            arch=str(data["arch"]),
            sm_count=int(data["sm_count"]),
            hbm_gbps=float(data["hbm_gbps"]),
            l2_bytes=int(data["l2_bytes"]),
            l2_gbps=float(data["l2_gbps"]),
            smem_per_sm=int(data["smem_per_sm"]),
            regs_per_sm=int(data["regs_per_sm"]),
            max_warps_per_sm=int(data["max_warps_per_sm"]),
            launch_overhead_us=float(data["launch_overhead_us"]),
            fma_tflops={str(k): float(v) for k, v in data["fma_tflops"].items()},
            tensor_tflops={str(k): float(v) for k, v in data["tensor_tflops"].items()},
            sources=tuple(str(s) for s in data["sources"]),
            measured_copy_gbps=_opt_float(data.get("measured_copy_gbps")),
            measured_tensor_tflops={
                str(k): float(v) for k, v in data.get("measured_tensor_tflops", {}).items()
            },
            measured_date=data.get("measured_date"),
            max_blocks_per_sm=int(data.get("max_blocks_per_sm", 32)),
            device_names=tuple(str(s) for s in data.get("device_names", ())),
            exclude_names=tuple(str(s) for s in data.get("exclude_names", ())),
            notes=tuple(str(s) for s in data.get("notes", ())),
        )
    except (TypeError, ValueError, AttributeError) as exc:
        raise HardwareError(f"{where}: malformed value: {exc}") from exc


def _opt_float(value: Any) -> float | None:
    return None if value is None else float(value)
