"""The universal LLM operator: diagnose -> retrieve -> synthesise the prompt -> tool-using episode.

``build_llm_operator(config, history, run_id)`` returns None when no API key is configured (the
registry then tells the user once that the offline operators are used). With a key, each
``propose`` call runs up to ``n`` episodes; each ends with one candidate or a failure recorded in
history (``llm_episodes``), and every API attempt is a row of the run's ledger (``llm_calls``).
When the run's budget (``config.llm_budget_usd``) is spent, ``propose`` raises ``StopSearch``
and the engine ends the run with that reason.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernelevolve.knowledge.kb import Hit, KnowledgeBase
from kernelevolve.search.llm.client import (
    BudgetExhausted,
    ClientSettings,
    LlmCancelled,
    LlmClient,
    LlmError,
)
from kernelevolve.search.llm.credentials import resolve_api_key
from kernelevolve.search.llm.diagnosis import Diagnosis, diagnose
from kernelevolve.search.llm.episode import run_episode
from kernelevolve.search.llm.prompt import (
    PromptInputs,
    SiblingOutcome,
    hardware_facts,
    spec_summary,
    system_blocks,
    user_message,
)
from kernelevolve.search.llm.tools import Workspace, harness_quick_test
from kernelevolve.search.operators.base import (
    NodeContext,
    NodeView,
    OperatorUnavailable,
    Proposal,
    StopSearch,
)
from kernelevolve.search.problem import source_hash
from kernelevolve.search.results import EvalResult

if TYPE_CHECKING:
    from kernelevolve.search.engine import SearchConfig
    from kernelevolve.search.history import History

logger = logging.getLogger(__name__)
CONSTRAINT_IDS = ("constraints/correctness-contract", "constraints/anti-cheat", "constraints/output-format")


@dataclasses.dataclass
class LlmOperatorSettings:
    max_turns: int = 12  # model turns per episode (tool calls and repairs included)
    quick_tests: int = 2  # quick_test tool uses per episode
    retrieved_docs: int = 4
    # Draft phase: when the template operator covers the problem, leave the drafts to it so that its
    # verified kernels become the LLM's first parents (as tree edges) in the expansion phase.
    defer_drafts_to_template: bool = True


class LlmOperator:
    name = "llm"

    def __init__(
        self,
        client: LlmClient,
        history: History,
        run_id: int,
        config: SearchConfig,
        kb: KnowledgeBase,
        settings: LlmOperatorSettings | None = None,
    ) -> None:
        self.client = client
        self.history = history
        self.run_id = run_id
        self.config = config
        self.kb = kb
        self.settings = settings or LlmOperatorSettings()
        self.failures: list[str] = []  # this operator's own negative memory, beside the engine's
        self._learned_from: set[int] = set()
        self._budget_stop: str | None = None  # set when the budget ran out after some proposals
        self._template_covers: dict[str, bool] = {}  # problem source hash -> template drafts exist
        constraints = [d for d in (kb.get(i) for i in CONSTRAINT_IDS) if d is not None]
        self._system = system_blocks(constraints)

    def propose(self, ctx: NodeContext, n: int, cancel: threading.Event) -> list[Proposal]:
        from kernelevolve.search import history_llm

        if self._budget_stop is not None:
            raise StopSearch(self._budget_stop)
        self._learn_from_best(ctx)
        if (
            ctx.parent is None
            and self.settings.defer_drafts_to_template
            and self._template_covers_problem(ctx, cancel)
        ):
            return []
        proposals: list[Proposal] = []
        known = set(ctx.known_hashes)
        for _ in range(max(0, n)):
            if cancel.is_set():
                break
            parent_id = ctx.parent.candidate_id if ctx.parent else None
            diagnosis, hits, prompt, workspace = self._prepare(ctx, cancel)
            record: dict[str, Any] = {
                "run_id": self.run_id,
                "parent_candidate_id": parent_id,
                "diagnosis": dataclasses.asdict(diagnosis),
                "retrieved": [h.document.id for h in hits],
            }
            mark = history_llm.last_call_id(self.history, self.run_id)
            try:
                episode = run_episode(
                    self.client,
                    self._system,
                    prompt,
                    workspace,
                    cancel,
                    max_turns=self.settings.max_turns,
                    parent_candidate_id=parent_id,
                )
            except BudgetExhausted as exc:
                history_llm.record_episode(self.history, outcome="budget", detail=str(exc), **record)
                if proposals:  # already paid for: hand them over, stop at the next call
                    self._budget_stop = str(exc)
                    break
                raise StopSearch(str(exc)) from None
            except LlmCancelled as exc:
                history_llm.record_episode(self.history, outcome="cancelled", detail=str(exc), **record)
                break
            except LlmError as exc:
                detail = self.client.redact(str(exc))
                history_llm.record_episode(self.history, outcome="api_error", detail=detail, **record)
                self.failures.append(f"LLM call failed: {detail}")
                break  # the API is unwell: let the offline operators carry this step
            if episode.source is None:
                detail = self.client.redact(episode.detail)
                history_llm.record_episode(
                    self.history,
                    outcome=episode.outcome,
                    detail=detail,
                    note=episode.note,
                    turns=episode.turns,
                    tool_calls=episode.tool_calls,
                    **record,
                )
                self.failures.append(f"an answer was unusable ({episode.outcome}): {detail[:300]}")
                continue
            digest = source_hash(episode.source)
            outcome = "duplicate" if digest in known else "proposed"
            history_llm.record_episode(
                self.history,
                outcome=outcome,
                note=episode.note,
                candidate_hash=digest,
                turns=episode.turns,
                tool_calls=episode.tool_calls,
                **record,
            )
            history_llm.set_candidate_hash(self.history, self.run_id, mark, digest)
            if outcome == "duplicate":
                self.failures.append("proposed a file identical to an earlier candidate")
                continue
            known.add(digest)
            note = episode.note or f"LLM: {diagnosis.summary}"
            proposals.append(Proposal(source=episode.source, operator=self.name, note=note[:200]))
        return proposals

    # -- steps ------------------------------------------------------------------------------------

    def _prepare(
        self, ctx: NodeContext, cancel: threading.Event
    ) -> tuple[Diagnosis, list[Hit], str, Workspace]:
        parent = ctx.parent
        parent_source: str | None = parent.source if parent else None
        parent_result: EvalResult | None = parent.result if parent else None
        op_hint = " ".join(o.split(".")[1] if o.count(".") >= 1 else o for o in ctx.spec.ops[:6])
        diagnosis = diagnose(parent_result, default_hardware=self.config.eval.hardware, op_hint=op_hint)
        hits = self.kb.search(
            diagnosis.query,
            platform=diagnosis.platform,
            kind=diagnosis.kind,
            phase=diagnosis.phase,
            limit=self.settings.retrieved_docs + len(CONSTRAINT_IDS),
        )  # the constraints are already in the system block
        hits = [h for h in hits if h.document.id not in CONSTRAINT_IDS][: self.settings.retrieved_docs]
        prompt = user_message(
            PromptInputs(
                problem_source=ctx.spec.source,
                spec_summary=spec_summary(ctx.spec),
                parent_source=parent_source,
                parent_outcome=describe(parent_result) if parent else None,
                diagnosis=diagnosis,
                hits=hits,
                hardware_facts=hardware_facts(diagnosis.hardware),
                siblings=[_sibling(s) for s in ctx.siblings if s.result is not None][:8],
                failures=list(dict.fromkeys([*ctx.failures, *self.failures])),
                best_outcome=describe(ctx.best.result) if ctx.best and ctx.best.result else None,
            )
        )
        workspace = Workspace(
            problem_source=ctx.spec.source,
            candidate=parent_source or "",
            quick_test=harness_quick_test(Path(ctx.spec.path), self.config.eval, cancel),
            read_doc=lambda doc_id: d.body if (d := self.kb.get(doc_id)) is not None else None,
            search_docs=self._search_text,
            quick_tests_left=self.settings.quick_tests,
        )
        return diagnosis, hits, prompt, workspace

    def _search_text(self, query: str) -> str:
        hits = self.kb.search(query, limit=6)
        if not hits:
            return "no documents match"
        return "\n".join(f"- {h.document.id}: {h.document.title} — {h.snippet[:200]}" for h in hits)

    def _template_covers_problem(self, ctx: NodeContext, cancel: threading.Event) -> bool:
        key = ctx.spec.source_hash
        if key not in self._template_covers:
            try:
                from kernelevolve.search.operators.template import TemplateOperator

                drafts = TemplateOperator().propose(ctx, 1, cancel)
            except (ImportError, OperatorUnavailable):
                drafts = []
            self._template_covers[key] = bool(drafts)
        return self._template_covers[key]

    def _learn_from_best(self, ctx: NodeContext) -> None:
        best = ctx.best
        if best is None or best.candidate_id in self._learned_from:
            return
        self._learned_from.add(best.candidate_id)
        from kernelevolve.knowledge.learning import distil, learned_documents

        if distil(self.history, best.candidate_id) is not None:
            self.kb.set_learned(learned_documents(self.history))


def describe(result: EvalResult | None) -> str:
    """The feedback of one evaluation as the prompt shows it."""
    if result is None:
        return "not evaluated yet"
    if not result.correct:
        return f"rejected at stage {result.stage.value}: {(result.reason or '').strip()[:800]}"
    kind = result.timing_kind.value if result.timing_kind else "untimed"
    speed = (
        f"{result.speedup:.3g}x against the best baseline"
        if result.speedup is not None
        else "no speedup figure"
    )
    roof = (
        f", {result.roofline_fraction:.0%} of the roofline floor"
        if result.roofline_fraction is not None
        else ""
    )
    device = f" on {result.fingerprint.device}" if result.fingerprint else ""
    return f"correct, {speed} ({kind}{device}){roof}"


def _sibling(node: NodeView) -> SiblingOutcome:
    return SiblingOutcome(operator=node.operator, note="", outcome=describe(node.result))


def _workspace_root(history: History) -> Path:
    db = Path(history.path).resolve()
    return db.parent.parent if db.parent.name == ".kernelevolve" else Path.cwd()


def build_llm_operator(config: SearchConfig, history: History, run_id: int) -> LlmOperator | None:
    """The LLM operator for one run, or None when no API key is configured."""
    key = resolve_api_key()
    if not key:
        return None
    from kernelevolve.knowledge.learning import learned_documents
    from kernelevolve.search.history_llm import HistoryLedger
    from kernelevolve.search.llm.client import DEFAULT_MODEL

    client = LlmClient(
        key,
        HistoryLedger(history, run_id),
        run_id,
        ClientSettings(model=config.llm_model or DEFAULT_MODEL, budget_usd=config.llm_budget_usd),
    )
    kb = KnowledgeBase(workspace=_workspace_root(history), learned=learned_documents(history), strict=False)
    for problem in kb.problems:
        logger.warning("knowledge document skipped: %s", problem)
    return LlmOperator(client, history, run_id, config, kb)


__all__ = ["LlmOperator", "LlmOperatorSettings", "build_llm_operator", "describe"]
