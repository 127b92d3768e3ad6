"""Build the operator list of a run from its configuration.

Order matters only for drafts: the template operator drafts from the spec; the tuning operator
refines any node; the LLM operator (``config.llm``) drafts and refines. An operator that cannot
serve the problem is reported, never silently dropped: ``OperatorSet.notices`` holds one line
per reason and ``not_covered`` the ATen ops outside the template library.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kernelevolve.search.operators.base import Operator, OperatorUnavailable
from kernelevolve.search.operators.tuning import TuningOperator

if TYPE_CHECKING:
    from kernelevolve.search.engine import SearchConfig
    from kernelevolve.search.history import History

NOT_COVERED = re.compile(r"not covered by the offline operators:\s*(.+)$")


@dataclass
class OperatorSet:
    drafters: list[Operator] = field(default_factory=list)  # propose from the spec (parent None)
    refiners: list[Operator] = field(default_factory=list)  # propose children of a node
    notices: list[tuple[str, str]] = field(default_factory=list)  # (level, message)
    not_covered: list[str] = field(default_factory=list)


def parse_not_covered(message: str) -> list[str]:
    """The op names of an OperatorUnavailable message ("not covered ...: aten.foo, aten.bar")."""
    match = NOT_COVERED.search(message)
    if not match:
        return []
    return [op.strip() for op in match.group(1).split(",") if op.strip()]


def _template(ops: OperatorSet) -> None:
    try:
        from kernelevolve.search.operators.template import TemplateOperator
    except ImportError as exc:
        ops.notices.append(("warning", f"template operator unavailable: {exc}"))
        return
    try:
        template = TemplateOperator()
    except OperatorUnavailable as exc:  # the engine also catches it from propose()
        ops.not_covered = parse_not_covered(str(exc))
        ops.notices.append(("warning", str(exc)))
        return
    ops.drafters.append(template)
    ops.refiners.append(template)


def build_operators(config: SearchConfig, history: History | None, run_id: int | None) -> OperatorSet:
    ops = OperatorSet()
    if config.llm and history is not None and run_id is not None:
        try:
            from kernelevolve.search.operators.llm import build_llm_operator
        except ImportError as exc:
            ops.notices.append(("warning", f"LLM operator unavailable: {exc}"))
        else:
            llm = build_llm_operator(config, history, run_id)
            if llm is None:
                ops.notices.append(("info", "no API key: using the offline operators"))
            else:
                ops.drafters.append(llm)
                ops.refiners.append(llm)
    _template(ops)
    ops.refiners.insert(0, TuningOperator())
    return ops
