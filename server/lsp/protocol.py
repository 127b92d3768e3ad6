"""The server's custom protocol: command ids, notification methods, payload shapes, labels.

docs/editor.md is the reference for client authors; keep the two in step.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pygls.exceptions import JsonRpcException

EVOLVE = "kernelEvolve.evolve"
CANCEL = "kernelEvolve.cancel"
APPLY_BEST = "kernelEvolve.applyBest"
SHOW_DIFF = "kernelEvolve.showDiff"
SHOW_HISTORY = "kernelEvolve.showHistory"
LIST_JOBS = "kernelEvolve.listJobs"
COMMANDS = (EVOLVE, CANCEL, APPLY_BEST, SHOW_DIFF, SHOW_HISTORY, LIST_JOBS)

CANDIDATE_NOTIFICATION = "kernelEvolve/candidate"
RUN_FINISHED_NOTIFICATION = "kernelEvolve/runFinished"
PROGRESS_NOTIFICATION = "kernelEvolve/progress"


class RequestFailed(JsonRpcException):
    """LSP's RequestFailed (-32803): the request was valid but could not be carried out."""

    CODE = -32803
    MESSAGE = "Request failed"


@dataclass(frozen=True)
class BestSoFar:
    """The best correct candidate known for one op (problem file)."""

    candidate_id: int
    speedup: float
    timing: str  # "measured" | "modelled"
    device: str  # short label, e.g. "H200"
    run_id: int | None = None
    stale: bool = False

    def label(self) -> str:
        if self.timing == "measured":
            text = f"⚡ {self.speedup:.2f}× measured {self.device}"
        else:
            text = f"≈{self.speedup:.2f}× modelled {self.device}"
        return text + (" (stale)" if self.stale else "")

    def short(self) -> str:
        return f"{self.speedup:.2f}×, {self.device}{'' if self.timing == 'measured' else ' modelled'}"


def short_device(device: str | None, timing: str | None = None, hardware: str | None = None) -> str:
    """'NVIDIA H200' -> 'H200'; modelled timings name the modelled hardware, not the CPU."""
    if timing == "modelled" and hardware:
        device = hardware
    if not device:
        return "?"
    text = device.strip()
    for prefix in ("NVIDIA ", "nvidia-", "nvidia ", "AMD ", "amd-"):
        if text.startswith(prefix):
            text = text[len(prefix) :]
    if text.startswith("cpu"):
        return "CPU"
    return text.upper() if text == text.lower() else text  # hardware ids: "h100-sxm" -> "H100-SXM"


def candidate_payload(
    *,
    uri: str,
    job_id: str,
    event: Any,  # events.CandidateEvaluated
    device_label: str,
    best: BestSoFar | None,
) -> dict[str, Any]:
    return {
        "uri": uri,
        "jobId": job_id,
        "runId": event.run_id,
        "candidateId": event.candidate_id,
        "parentId": event.parent_id,
        "operator": event.operator,
        "step": event.step,
        "verdict": event.verdict,
        "stage": event.stage,
        "reason": event.reason,
        "speedup": event.speedup,
        "timing": event.timing_kind,
        "device": device_label,
        "diff": event.diff,
        "isBest": best is not None and best.candidate_id == event.candidate_id,
        "bestSpeedup": best.speedup if best is not None else None,
    }
