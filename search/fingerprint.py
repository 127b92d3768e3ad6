"""The environment fingerprint stored with every measurement."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import platform
import shutil
import socket
import subprocess
from pathlib import Path

from kernelevolve.search.results import HARNESS_VERSION, Fingerprint

CPU_DEVICE = "cpu (Triton interpreter)"


def collect(device: str, hardware_model: str | None) -> Fingerprint:
    """Fingerprint of this process's environment; ``device`` is "cuda[:N]" or "cpu"."""
    import torch

    try:
        import triton

        triton_version = str(triton.__version__)
    except ImportError:
        triton_version = "absent"

    device_name = CPU_DEVICE
    driver: str | None = None
    cuda: str | None = None
    if device.startswith("cuda") and torch.cuda.is_available():
        index = torch.device(device).index
        index = torch.cuda.current_device() if index is None else index
        device_name = torch.cuda.get_device_name(index)
        cuda = torch.version.cuda or torch.version.hip
        driver = _driver_version()
    return Fingerprint(
        device=device_name,
        driver=driver,
        cuda=cuda,
        torch=str(torch.__version__),
        triton=triton_version,
        python=platform.python_version(),
        harness_version=HARNESS_VERSION,
        hardware_model=hardware_model,
        host=socket.gethostname(),
        code_hash=code_hash(),
    )


@functools.cache
def code_hash() -> str:
    """Hash of every Python source of kernelevolve as imported here (search, knowledge, server).

    ``harness_version`` changes by hand; this changes with any edit, so a measurement can be tied
    to the exact code that produced it (a dirty working tree included).
    """
    import kernelevolve.knowledge
    import kernelevolve.search
    import kernelevolve.server

    digest = hashlib.sha256()
    for package in (kernelevolve.search, kernelevolve.knowledge, kernelevolve.server):
        root = Path(next(iter(package.__path__)))
        for path in sorted(root.rglob("*.py")):
            digest.update(str(path.relative_to(root.parent)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _driver_version() -> str | None:
    """NVIDIA driver version via pynvml, else nvidia-smi; None when neither answers."""
    with contextlib.suppress(Exception):
        import pynvml

        pynvml.nvmlInit()
        try:
            version = pynvml.nvmlSystemGetDriverVersion()
            return version.decode() if isinstance(version, bytes) else str(version)
        finally:
            pynvml.nvmlShutdown()
    smi = shutil.which("nvidia-smi")
    if smi:
        with contextlib.suppress(Exception):
            out = subprocess.run(
                [smi, "--query-gpu=driver_version", "--format=csv,noheader"],
                capture_output=True,
                text=True,
                timeout=10,
                check=True,
            )
            first = out.stdout.strip().splitlines()
            if first:
                return first[0].strip()
    return None
