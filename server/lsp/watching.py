"""Kernel files on disk: re-verify on change, update hints and diagnostics, mark stale history.

The watchdog thread calls ``_changed``; it hands the path to the loop, which runs ``evaluate`` on a
``search_pool`` thread and then publishes diagnostics and refreshes hints from the loop thread.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from kernelevolve.search.config import EvalConfig
from kernelevolve.search.history_lsp import get_kernel_file, list_kernel_files, upsert_kernel_file
from kernelevolve.search.problem import source_hash
from kernelevolve.search.results import EvalResult
from kernelevolve.search.watch import KERNEL_SUFFIX, KernelWatcher, content_hash, find_kernel_files
from kernelevolve.server.lsp.protocol import BestSoFar, short_device
from kernelevolve.server.lsp.server import EvolveServer
from lsprotocol import types
from pygls.uris import from_fs_path

logger = logging.getLogger(__name__)


class ServerWatcher:
    def __init__(self, ls: EvolveServer, loop: asyncio.AbstractEventLoop) -> None:
        self.ls = ls
        self.loop = loop
        self.problems: dict[Path, Path] = {}  # kernel file -> its problem
        self.watcher = KernelWatcher(self._changed)
        self.verifications = 0  # finished re-verifications, for tests and the latency benchmark

    def track(
        self, kernel: Path, problem: Path, best: BestSoFar | None, *, candidate_id: int | None = None
    ) -> None:
        kernel, problem = Path(kernel).resolve(), Path(problem).resolve()
        self.problems[kernel] = problem
        self.watcher.watch(kernel)
        cid = candidate_id if candidate_id is not None else (best.candidate_id if best else None)
        digest = content_hash(kernel)

        def record() -> None:
            upsert_kernel_file(
                self.ls.history(),
                str(kernel),
                problem_path=str(problem),
                candidate_id=cid,
                source_hash=digest,
                verdict="correct" if best else None,
                speedup=best.speedup if best else None,
                timing_kind=best.timing if best else None,
                device=best.device if best else None,
            )

        self.ls.io_pool.submit(record)

    def stop(self) -> None:
        self.watcher.stop()

    def _changed(self, path: Path, old_hash: str | None) -> None:  # watchdog thread
        self.loop.call_soon_threadsafe(lambda: self.ls.spawn(self.reverify(path, old_hash)))

    async def reverify(self, kernel: Path, old_hash: str | None = None) -> EvalResult | None:
        problem = self.problems.get(kernel)
        if problem is None or not problem.exists():
            return None
        ls = self.ls
        uri = from_fs_path(str(kernel)) or kernel.as_uri()
        ls.log(f"kernelevolve: {kernel.name} changed on disk; re-verifying against {problem.name}")
        try:
            source = kernel.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            ls.log(f"kernelevolve: cannot read {kernel}: {exc}", types.MessageType.Warning)
            return None
        from kernelevolve.search.harness import evaluate

        config = EvalConfig(device=ls.settings.device, hardware=ls.settings.hardware)  # type: ignore[arg-type]
        loop = asyncio.get_running_loop()
        result = await loop.run_in_executor(
            ls.search_pool, lambda: evaluate(problem, source, config, candidate_name=kernel.name)
        )
        await ls.in_io(lambda: self._record(kernel, problem, source, result, old_hash))
        ls.history_generation += 1
        self._publish(uri, kernel, problem, result)
        self.verifications += 1
        return result

    def _record(
        self, kernel: Path, problem: Path, source: str, result: EvalResult, old_hash: str | None
    ) -> None:
        """Mark stale the history rows the file no longer matches; remember the new verdict."""
        history = self.ls.history()
        known = get_kernel_file(history, str(kernel))
        cid = known.candidate_id if known else None
        stale_ids = {cid} if cid is not None else set()
        for old in {old_hash, known.source_hash if known else None} - {None}:
            rows = history.query("SELECT id FROM candidates WHERE source_hash = ? AND stale = 0", [old])
            stale_ids.update(r["id"] for r in rows)
        verdict = result.verdict.value
        speed = f" {result.speedup:.2f}x" if result.speedup else ""
        for candidate_id in sorted(stale_ids):
            record = history.get_candidate(candidate_id)
            if record is not None and record.source_hash != source_hash(source) and not record.stale:
                history.mark_stale(
                    candidate_id, f"{kernel.name} changed on disk; re-verified {verdict}{speed}"
                )
        upsert_kernel_file(
            history,
            str(kernel),
            problem_path=str(problem),
            candidate_id=cid,
            source_hash=content_hash(kernel),
            verdict=result.verdict.value,
            speedup=result.speedup,
            timing_kind=result.timing_kind.value if result.timing_kind else None,
            device=result.fingerprint.device if result.fingerprint else None,
            reason=result.reason,
        )

    def _publish(self, uri: str, kernel: Path, problem: Path, result: EvalResult) -> None:
        ls = self.ls
        diagnostics: list[types.Diagnostic] = []
        if not result.correct:
            diagnostics.append(
                types.Diagnostic(
                    range=types.Range(
                        start=types.Position(line=0, character=0), end=types.Position(line=0, character=1)
                    ),
                    message=f"kernel rejected at {result.stage.value}: {result.reason or 'no reason given'}",
                    severity=types.DiagnosticSeverity.Error,
                    source="kernelevolve",
                )
            )
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics))
        key = str(problem)
        if result.correct and result.speedup is not None and result.timing_kind is not None:
            timing = result.timing_kind.value
            hardware = result.fingerprint.hardware_model if result.fingerprint else None
            device = short_device(result.fingerprint.device if result.fingerprint else None, timing, hardware)
            previous = ls.best.get(key)
            ls.best[key] = BestSoFar(previous.candidate_id if previous else 0, result.speedup, timing, device)
        elif key in ls.best:
            ls.best[key] = BestSoFar(
                ls.best[key].candidate_id,
                ls.best[key].speedup,
                ls.best[key].timing,
                ls.best[key].device,
                ls.best[key].run_id,
                stale=True,
            )
        ls.refresh_hints()


async def start_watching(ls: EvolveServer) -> ServerWatcher:
    watcher = ServerWatcher(ls, asyncio.get_running_loop())
    ls.watcher = watcher

    def known() -> list[tuple[Path, Path]]:
        recorded = list_kernel_files(ls.history()) if ls.db_path.exists() else []
        pairs = [(Path(k.path), Path(k.problem_path)) for k in recorded]
        seen = {k for k, _ in pairs}
        for kernel in find_kernel_files(ls.root):
            problem = kernel.with_name(kernel.name[: -len(KERNEL_SUFFIX)] + ".py")
            if kernel.resolve() not in seen and problem.exists():
                pairs.append((kernel.resolve(), problem.resolve()))
        return pairs

    try:
        pairs = await ls.in_io(known)
    except Exception as exc:
        logger.warning("could not list kernel files: %s", exc)
        pairs = []
    for kernel, problem in pairs:
        if kernel.exists():
            watcher.problems[kernel] = problem
            watcher.watcher.watch(kernel)
    watcher.watcher.start()
    return watcher
