"""One tool-using episode that ends with one candidate file (or a recorded failure).

The model edits candidate.py through tools, or answers with one ```python block holding the whole
file; both are accepted, and a final block wins. A final file that fails lint (syntax, no
ModelNew, static anti-cheat) is sent back once per remaining turn for repair; when turns run out
the episode fails with the lint report as the reason.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from typing import Any

from kernelevolve.search.llm.client import LlmClient
from kernelevolve.search.llm.tools import TOOL_SPECS, Workspace, lint_source

_FENCE = re.compile(r"```(?:python|py)?[ \t]*\n(.*?)```", re.S)


@dataclass
class EpisodeResult:
    source: str | None  # the candidate, None on failure
    note: str
    outcome: str  # "proposed", "no_code", "invalid", "max_turns"
    detail: str = ""  # failure reason, lint report
    turns: int = 0
    tool_calls: int = 0


def extract_python(text: str) -> str | None:
    """The last fenced python block of a reply (the whole candidate file), if any."""
    blocks = _FENCE.findall(text)
    return blocks[-1].strip() + "\n" if blocks else None


def note_from(text: str) -> str:
    """The first plain-text line outside code fences: the model's one-line account of its change."""
    outside = _FENCE.sub("", text)
    for line in outside.splitlines():
        line = line.strip().strip("*#- ").strip()
        if len(line) > 8:
            return line[:200]
    return ""


def run_episode(
    client: LlmClient,
    system: list[dict[str, Any]],
    first_user: str,
    workspace: Workspace,
    cancel: threading.Event,
    *,
    max_turns: int = 12,
    parent_candidate_id: int | None = None,
) -> EpisodeResult:
    """Raises the client's LlmCancelled/BudgetExhausted/LlmError; every other failure is a result."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": first_user}]
    note = ""
    last_report = ""
    for turn in range(1, max_turns + 1):
        message = client.create(
            system=system,
            messages=with_cache_breakpoint(messages),
            tools=TOOL_SPECS,
            cancel=cancel,
            parent_candidate_id=parent_candidate_id,
        )
        blocks = [b for b in map(_block_param, message.content) if b["type"] != "text" or b["text"]]
        messages.append({"role": "assistant", "content": blocks or [{"type": "text", "text": "(empty)"}]})
        text = "\n".join(b.get("text", "") for b in blocks if b["type"] == "text")
        note = note_from(text) or note
        tool_uses = [b for b in blocks if b["type"] == "tool_use"]
        if tool_uses and message.stop_reason == "tool_use":
            results = []
            for use in tool_uses:
                output, is_error = workspace.call(use["name"], dict(use.get("input") or {}))
                results.append(
                    {"type": "tool_result", "tool_use_id": use["id"], "content": output, "is_error": is_error}
                )
            messages.append({"role": "user", "content": results})
            continue
        block = extract_python(text)
        if block is not None:
            workspace.candidate = block
            workspace.edited = True
        if not workspace.edited or not workspace.candidate.strip():
            last_report = "the answer held no code: neither a ```python block nor edits to candidate.py"
            if message.stop_reason == "max_tokens":
                last_report = (
                    "the answer was cut off at the output token limit before the code ended; "
                    "edit with replace_in_file or answer with a shorter file"
                )
            outcome = "no_code"
        else:
            report = lint_source(workspace.candidate)
            if report is None:
                return EpisodeResult(
                    workspace.candidate, note, "proposed", turns=turn, tool_calls=len(workspace.calls)
                )
            last_report, outcome = report, "invalid"
        if turn == max_turns:
            return EpisodeResult(None, note, outcome, last_report, turn, len(workspace.calls))
        messages.append(
            {
                "role": "user",
                "content": f"Your answer cannot be used: {last_report}\nFix it and answer again with the whole file.",
            }
        )
    return EpisodeResult(
        None, note, "max_turns", last_report or "tool turns exhausted", max_turns, len(workspace.calls)
    )


def with_cache_breakpoint(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A copy whose last content block carries ``cache_control``, so each turn of the episode
    reads the conversation so far from the prompt cache (the system block holds the other mark)."""
    out = [dict(m) for m in messages]
    last = out[-1]
    content = last["content"]
    blocks: list[dict[str, Any]] = (
        [{"type": "text", "text": content}] if isinstance(content, str) else [dict(b) for b in content]
    )
    blocks[-1]["cache_control"] = {"type": "ephemeral"}
    last["content"] = blocks
    return out


def _block_param(block: Any) -> dict[str, Any]:
    """An SDK content block as a request parameter (only text and tool_use are sent back)."""
    if block.type == "tool_use":
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
    if block.type == "text":
        return {"type": "text", "text": block.text}
    return {"type": "text", "text": ""}
