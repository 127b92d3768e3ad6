"""Run one untrusted command in a contained child process and say how it ended.

The child gets its own session (so the whole process group can be killed), a scrubbed environment
built from an allow-list, a fresh working directory, and limits:

- wall clock: the group is SIGTERMed, then SIGKILLed after a short grace;
- memory: the resident set of the child's whole process tree is polled with psutil every ~20 ms
  (works with CUDA, unlike RLIMIT_AS); on the CPU RLIMIT_DATA is a second line;
- processes and threads: RLIMIT_NPROC where the kernel enforces it (not for root), plus polling
  the number of processes + threads in the tree;
- output: stdout/stderr go to files whose size is polled, so a chatty child cannot fill the disk
  or block on a pipe.

Nothing here knows about kernels; ``kernelevolve.search.harness`` builds the worker command.
"""

from __future__ import annotations

import contextlib
import os
import re
import resource
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import psutil
from kernelevolve.search.config import SandboxLimits

POLL_S = 0.02
TERM_GRACE_S = 0.5
KILL_WAIT_S = 2.0  # how long SIGKILLed processes get to disappear before they count as survivors
LOG_TAIL_BYTES = 4096

# Variables copied from the caller when present; everything else (API keys, tokens, ...) is dropped.
ENV_ALLOW = (
    "PATH",
    "LANG",
    "LANGUAGE",
    "TZ",
    "PYTHONPATH",
    "LD_LIBRARY_PATH",
    "CUDA_HOME",
    "CUDA_PATH",
    "CUDA_VISIBLE_DEVICES",
    "NVIDIA_VISIBLE_DEVICES",
    "NVIDIA_DRIVER_CAPABILITIES",
    "TRITON_PTXAS_PATH",
    "TRITON_CUOBJDUMP_PATH",
    "TRITON_NVDISASM_PATH",
    "TRITON_LIBCUDA_PATH",
)
ENV_ALLOW_PREFIXES = ("LC_",)


@dataclass
class SandboxOutcome:
    """How the child ended. ``killed`` is set when the sandbox ended it, with the reason."""

    returncode: int | None
    killed: str | None  # "wall-clock timeout after 5 s", "memory limit 1024 MB exceeded", ...
    duration_s: float
    peak_rss_mb: float
    peak_tasks: int
    stdout_tail: str
    stderr_tail: str
    leftover_pids: list[int] = field(default_factory=list)  # pids that survived the kill (should be empty)

    @property
    def signal_name(self) -> str | None:
        if self.returncode is None or self.returncode >= 0:
            return None
        try:
            return signal.Signals(-self.returncode).name
        except ValueError:
            return f"signal {-self.returncode}"

    @property
    def log_tail(self) -> str:
        parts = []
        if self.stdout_tail.strip():
            parts.append("--- stdout ---\n" + self.stdout_tail)
        if self.stderr_tail.strip():
            parts.append("--- stderr ---\n" + self.stderr_tail)
        return "\n".join(parts)


SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH|ANTHROPIC", re.IGNORECASE)


def without_secrets(base: Mapping[str, str]) -> dict[str, str]:
    """``base`` less every variable whose name suggests a credential (ANTHROPIC_API_KEY, *_TOKEN, ...).

    For child processes that run the user's own code (trace, graph capture): they keep the user's
    environment, but never the API key.
    """
    return {k: v for k, v in base.items() if not SECRET_NAME.search(k)}


def scrubbed_env(base: Mapping[str, str], extra: Mapping[str, str]) -> dict[str, str]:
    """The allow-listed subset of ``base`` plus ``extra`` (which wins)."""
    env = {k: v for k, v in base.items() if k in ENV_ALLOW or k.startswith(ENV_ALLOW_PREFIXES)}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env.update(extra)
    return env


def _user_task_count() -> int:
    """Processes + threads of this real uid; RLIMIT_NPROC counts them all, not only the child's."""
    uid = os.getuid()
    count = 0
    for proc in psutil.process_iter(["uids", "num_threads"]):
        with contextlib.suppress(psutil.Error, TypeError):
            if proc.info["uids"] is not None and proc.info["uids"].real == uid:
                count += proc.info["num_threads"] or 1
    return count


def apply_rlimits(limits: SandboxLimits, rlimit_data: bool) -> None:
    """Second-line kernel limits; the worker calls this on itself before any candidate code runs.

    (Done in the worker rather than a ``preexec_fn``, which is unsafe in a threaded caller such as
    the language server.)
    """
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if os.getuid() != 0:  # root ignores RLIMIT_NPROC; the poll is the only line there
        nproc = _user_task_count() + limits.max_processes
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
    if rlimit_data:
        # Headroom over the polled limit: the poll gives the clear message, this is the backstop.
        cap = limits.memory_mb * 2 * 1024 * 1024
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_DATA, (cap, cap))


def _tail(path: Path, limit: int = LOG_TAIL_BYTES) -> str:
    try:
        with path.open("rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - limit))
            data = fh.read()
    except OSError:
        return ""
    text = data.decode("utf-8", errors="replace")
    return text if size <= limit else "[...]" + text


class _Tree:
    """The child and every process ever seen below it (so late orphans are still killed)."""

    def __init__(self, root: psutil.Process) -> None:
        self.root = root
        self.seen: dict[int, psutil.Process] = {root.pid: root}

    def members(self) -> list[psutil.Process]:
        procs = [self.root]
        with contextlib.suppress(psutil.Error):
            procs += self.root.children(recursive=True)
        for p in procs:
            self.seen.setdefault(p.pid, p)
        return procs

    def usage(self) -> tuple[float, int]:
        """Resident MB and processes + threads of the tree.

        One process: its RSS (cheap). Several: the sum of PSS, so pages a forked child shares
        copy-on-write with its parent are counted once, not once per process.
        """
        members = self.members()
        resident = 0
        tasks = 0
        for p in members:
            with contextlib.suppress(psutil.Error):
                tasks += p.num_threads()
                resident += p.memory_info().rss if len(members) == 1 else _pss(p)
        return resident / (1024 * 1024), tasks

    def kill(self, pgid: int) -> list[int]:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGTERM)
        deadline = time.monotonic() + TERM_GRACE_S
        while time.monotonic() < deadline and _alive(self.root):
            time.sleep(POLL_S)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
        self.members()
        for p in self.seen.values():
            with contextlib.suppress(psutil.Error):
                p.kill()
        others = [p for p in self.seen.values() if p.pid != self.root.pid]
        with contextlib.suppress(psutil.Error):
            psutil.wait_procs(others, timeout=KILL_WAIT_S)
        return self.survivors()

    def survivors(self) -> list[int]:
        alive = []
        for p in self.seen.values():
            if p.pid == self.root.pid:
                continue
            if _alive(p):
                alive.append(p.pid)
        return alive


def _pss(p: psutil.Process) -> int:
    try:
        return int(p.memory_full_info().pss)
    except psutil.NoSuchProcess:
        raise
    except (AttributeError, OSError, psutil.Error):  # no smaps (gVisor, hardened /proc): RSS instead
        return int(p.memory_info().rss)


def _alive(p: psutil.Process) -> bool:
    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def run_sandboxed(
    argv: list[str],
    *,
    cwd: Path,
    log_dir: Path,
    env: Mapping[str, str],
    limits: SandboxLimits,
    cancel: threading.Event | None = None,
    on_poll: Callable[[], None] | None = None,
) -> SandboxOutcome:
    """Run ``argv`` to completion or until a limit or ``cancel`` ends it; never raises for the child."""
    stdout_path = log_dir / "stdout.log"
    stderr_path = log_dir / "stderr.log"
    output_cap = limits.output_mb * 1024 * 1024
    start = time.monotonic()
    with stdout_path.open("wb") as out, stderr_path.open("wb") as err:
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            start_new_session=True,
            close_fds=True,
        )
    tree = _Tree(psutil.Process(proc.pid))
    killed: str | None = None
    peak_rss = 0.0
    peak_tasks = 0
    try:
        while proc.poll() is None:
            elapsed = time.monotonic() - start
            rss, tasks = tree.usage()
            peak_rss, peak_tasks = max(peak_rss, rss), max(peak_tasks, tasks)
            if cancel is not None and cancel.is_set():
                killed = "cancelled"
            elif elapsed > limits.timeout_s:
                killed = f"wall-clock timeout after {limits.timeout_s:g} s"
            elif tasks > limits.max_processes:
                killed = f"process/thread limit {limits.max_processes} exceeded ({tasks} running)"
            elif rss > limits.memory_mb:
                killed = f"memory limit {limits.memory_mb} MB exceeded ({rss:.0f} MB resident)"
            elif _size(stdout_path) + _size(stderr_path) > output_cap:
                killed = f"output limit {limits.output_mb} MB exceeded on stdout/stderr"
            if killed:
                break
            if on_poll is not None:
                on_poll()
            time.sleep(POLL_S)
    finally:
        leftovers = tree.kill(proc.pid)
        proc.wait()
    return SandboxOutcome(
        returncode=proc.returncode,
        killed=killed,
        duration_s=time.monotonic() - start,
        peak_rss_mb=peak_rss,
        peak_tasks=peak_tasks,
        stdout_tail=_tail(stdout_path),
        stderr_tail=_tail(stderr_path),
        leftover_pids=leftovers,
    )


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
