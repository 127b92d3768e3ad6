"""Validation of command arguments: one JSON object, typed fields, InvalidParams otherwise."""

from __future__ import annotations

from typing import Any

from pygls.exceptions import JsonRpcInvalidParams


def one_object(command: str, args: tuple[Any, ...], *, optional: bool = False) -> dict[str, Any]:
    if not args and optional:
        return {}
    if len(args) != 1 or not isinstance(args[0], dict):
        raise JsonRpcInvalidParams(message=f"{command} takes one JSON object argument, got {list(args)!r}")
    return args[0]


def opt_str(command: str, obj: dict[str, Any], key: str) -> str | None:
    value = obj.get(key)
    if value is not None and (not isinstance(value, str) or not value):
        raise JsonRpcInvalidParams(message=f"{command}: {key} must be a non-empty string, got {value!r}")
    return value


def req_str(command: str, obj: dict[str, Any], key: str) -> str:
    value = opt_str(command, obj, key)
    if value is None:
        raise JsonRpcInvalidParams(message=f"{command}: {key} is required")
    return value


def opt_int(command: str, obj: dict[str, Any], key: str) -> int | None:
    value = obj.get(key)
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        raise JsonRpcInvalidParams(message=f"{command}: {key} must be a non-negative integer, got {value!r}")
    return value


def line_of(command: str, obj: dict[str, Any]) -> int:
    """`line`, or `range.start.line`, or 0."""
    line = opt_int(command, obj, "line")
    if line is not None:
        return line
    rng = obj.get("range")
    if rng is None:
        return 0
    try:
        start = rng["start"]["line"]
    except (TypeError, KeyError) as exc:
        raise JsonRpcInvalidParams(message=f"{command}: range must be an LSP Range, got {rng!r}") from exc
    return int(opt_int(command, {"line": start}, "line") or 0)
