"""Progress for one search: LSP work-done progress when the client has it, else our notification.

Work-done progress is created only when the client advertises ``window.workDoneProgress``; a
client cancel stops the search. Other clients get pyright-style ``kernelEvolve/progress``
notifications (begin/report/end) carrying the same token.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from kernelevolve.server.lsp.protocol import PROGRESS_NOTIFICATION
from lsprotocol import types

logger = logging.getLogger(__name__)


class JobProgress:
    def __init__(self, ls: Any, token: str, job_id: str, on_cancel: Callable[[], None]) -> None:
        self.ls = ls
        self.token = token
        self.job_id = job_id
        self.on_cancel = on_cancel
        self.native = False
        self.ended = False

    async def begin(self, title: str, message: str) -> None:
        if self.ls.has_capability("window.work_done_progress"):
            try:
                await self.ls.work_done_progress.create_async(self.token)
                self.native = True
            except Exception as exc:
                logger.info("workDoneProgress/create refused (%s): falling back to notifications", exc)
        if self.native:
            self.ls.work_done_progress.begin(
                self.token,
                types.WorkDoneProgressBegin(title=title, message=message, percentage=0, cancellable=True),
            )
            future: Future[Any] = self.ls.work_done_progress.tokens[self.token]
            future.add_done_callback(lambda f: self.on_cancel() if f.cancelled() else None)
        else:
            self._notify("begin", title=title, message=message, percentage=0, cancellable=True)

    def report(self, message: str, percentage: int | None) -> None:
        if self.ended:
            return
        if self.native:
            self.ls.work_done_progress.report(
                self.token, types.WorkDoneProgressReport(message=message, percentage=percentage)
            )
        else:
            self._notify("report", message=message, percentage=percentage)

    def end(self, message: str) -> None:
        if self.ended:
            return
        self.ended = True
        if self.native:
            self.ls.work_done_progress.end(self.token, types.WorkDoneProgressEnd(message=message))
            self.ls.work_done_progress.tokens.pop(self.token, None)
        else:
            self._notify("end", message=message)

    def _notify(self, kind: str, **fields: Any) -> None:
        payload = {"token": self.token, "jobId": self.job_id, "kind": kind}
        payload.update({k: v for k, v in fields.items() if v is not None})
        self.ls.protocol.notify(PROGRESS_NOTIFICATION, payload)
