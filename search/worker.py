"""The sandboxed worker: ``python -m kernelevolve.search.worker JOB_DIR``.

It reads ``JOB_DIR/job.json``, isolates itself (network namespace, rlimits), and then either
evaluates one candidate (COMPILE -> CORRECTNESS -> GHOST -> TIMING, see ``stages``) or describes a
problem. Before each stage it appends a marker to ``JOB_DIR/progress.jsonl`` so that, if the
process dies, the parent can say in which stage. The answer goes to ``JOB_DIR/result.json`` as
one of ``{"result": EvalResult}``, ``{"spec": ...}``, ``{"problem_error": msg}``,
``{"env_error": msg}`` or ``{"internal_error": traceback}``. The process then ends with
``os._exit`` so no thread or atexit hook the candidate left behind can hold it open.
"""

from __future__ import annotations

import ctypes
import importlib.util
import json
import os
import signal
import sys
import time
import traceback
from pathlib import Path
from types import ModuleType
from typing import Any

from kernelevolve.search.worker_errors import EnvFault, ProblemFault

PR_SET_PDEATHSIG = 1
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000


class Progress:
    def __init__(self, path: Path) -> None:
        self.path = path

    def __call__(self, stage: str) -> None:
        with self.path.open("a") as fh:
            fh.write(json.dumps({"stage": stage, "t": time.time()}) + "\n")
            fh.flush()
            os.fsync(fh.fileno())


def isolate_network() -> str | None:
    """Enter an empty network namespace; return a warning when the OS refuses."""
    libc = ctypes.CDLL(None, use_errno=True)
    if not hasattr(libc, "unshare"):  # not Linux
        return "network isolation unavailable: this OS has no unshare(2)"
    if libc.unshare(CLONE_NEWNET) == 0:
        return None
    first = os.strerror(ctypes.get_errno())
    # Unprivileged: a user namespace (own uid mapped to itself) lets us own a network namespace.
    uid, gid = os.getuid(), os.getgid()
    if libc.unshare(CLONE_NEWUSER | CLONE_NEWNET) == 0:
        try:
            Path("/proc/self/setgroups").write_text("deny")
            Path("/proc/self/uid_map").write_text(f"{uid} {uid} 1")
            Path("/proc/self/gid_map").write_text(f"{gid} {gid} 1")
        except OSError:
            pass
        return None
    second = os.strerror(ctypes.get_errno())
    return f"network isolation unavailable: unshare(CLONE_NEWNET) failed ({first}; with a user namespace: {second})"


def import_file(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def resolve_device(choice: str) -> str:
    import torch

    if choice == "cpu":
        return "cpu"
    if torch.cuda.is_available():
        return "cuda"
    if choice == "cuda":
        raise EnvFault("CUDA was requested but the worker sees no GPU")
    return "cpu"


def prepare_device(config: Any) -> str:
    """Pick the device, then set up Triton for it (the interpreter on the CPU) before importing it."""
    from kernelevolve.search.sandbox import apply_rlimits

    device = resolve_device(config.device)
    apply_rlimits(config.limits, rlimit_data=device == "cpu")
    if device == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"
    import triton  # noqa: F401  (imported only once TRITON_INTERPRET is settled)

    if device == "cpu":
        from kernelevolve.search.modelled import install_modelled_autotuning

        # The interpreter has no driver to benchmark autotune configs: price them with the model.
        install_modelled_autotuning(config.hardware)
    return device


def enter_gpu_lock(job: dict[str, Any], device: str) -> Any:
    """On CUDA, take part in the GPU's cross-process lock named by the parent (see gpu_lock)."""
    from kernelevolve.search import gpu_lock

    path = job.get("gpu_lock")
    if device == "cuda" and path:
        import torch

        gpu_lock.install(gpu_lock.GpuLock(Path(path), before_release=torch.cuda.synchronize))
    return gpu_lock.current()


def load_problem(path: Path) -> ModuleType:
    sys.path.append(str(path.parent))  # a problem may import helpers that sit next to it
    try:
        return import_file("kernelevolve_problem", path)
    except Exception as exc:
        raise ProblemFault(f"{path}: importing the problem failed: {type(exc).__name__}: {exc}") from exc


def describe(job: dict[str, Any], progress: Progress) -> dict[str, Any]:
    import torch
    from kernelevolve.search.config import EvalConfig
    from kernelevolve.search.inputs import dtype_name, seed_everything, to_device
    from torch.utils._python_dispatch import TorchDispatchMode

    config = EvalConfig.from_dict(job["config"])
    progress("setup")
    device = prepare_device(config)
    gpu = enter_gpu_lock(job, device)
    problem = load_problem(Path(job["problem_path"]))
    ops: list[str] = []

    class OpRecorder(TorchDispatchMode):
        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            name = str(func)
            if name not in ops:
                ops.append(name)
            return func(*args, **(kwargs or {}))

    try:
        with gpu.shared():
            seed_everything(0)
            init = list(problem.get_init_inputs())
            seed_everything(0)
            model = problem.Model(*init).to(device).eval()
            seed_everything(0)
            inputs = to_device(list(problem.get_inputs()), device)
            with torch.no_grad(), OpRecorder():
                model(*inputs)
    except Exception as exc:
        raise ProblemFault(f"running the reference failed: {type(exc).__name__}: {exc}") from exc
    specs: list[Any] = []
    for x in inputs:
        if isinstance(x, torch.Tensor):
            specs.append({"shape": list(x.shape), "dtype": dtype_name(x.dtype)})
        else:
            specs.append(repr(x))
    return {
        "spec": {
            "inputs": specs,
            "init_inputs": [repr(v) for v in init],
            "has_test_inputs": hasattr(problem, "get_test_inputs"),
            "has_benchmark_inputs": hasattr(problem, "get_benchmark_inputs"),
            "ops": ops,
            "device": device,
        }
    }


def run_job(job_dir: Path, job: dict[str, Any]) -> dict[str, Any]:
    progress = Progress(job_dir / "progress.jsonl")
    warnings: list[str] = []
    if not job["config"]["limits"].get("network", False):
        warning = isolate_network()
        if warning:
            warnings.append(warning)
    try:
        if job["mode"] == "describe":
            return describe(job, progress)
        from kernelevolve.search.stages import evaluate_candidate

        result = evaluate_candidate(job, progress, warnings)
        return {"result": result.to_dict()}
    except ProblemFault as exc:
        return {"problem_error": str(exc)}
    except EnvFault as exc:
        return {"env_error": str(exc)}


def die_with_parent(parent_pid: int | None) -> None:
    """Get SIGKILL when the caller dies: its poll loop enforces our limits, so we must not outlive it."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (AttributeError, OSError):  # not Linux: the caller's kill of our process group must do
        return
    if parent_pid is not None and os.getppid() != parent_pid:  # it died before prctl took effect
        os._exit(1)


def main(argv: list[str]) -> None:
    job_dir = Path(argv[1])
    job = json.loads((job_dir / "job.json").read_text())
    (job_dir / "job.json").unlink()
    die_with_parent(job.get("parent_pid"))
    # The parent accepts a result only with this nonce; it lives in this frame alone, so a file
    # the candidate writes into the job directory cannot pass for the worker's answer.
    nonce = job.pop("nonce", None)
    try:
        payload = run_job(job_dir, job)
    except BaseException:  # noqa: BLE001 - a harness bug; report it rather than die silently
        payload = {"internal_error": traceback.format_exc()[-4000:]}
    payload["nonce"] = nonce
    tmp = job_dir / "result.json.tmp"
    tmp.write_text(json.dumps(payload))
    tmp.rename(job_dir / "result.json")
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main(sys.argv)
