// The server's notifications feed the search tracker (status bar, candidate picker) and the log.
// Pure: the extension wires it to the LanguageClient, the wire tests to a bare JSON-RPC connection.

import type { Log } from "./commands";
import {
  CANDIDATE_NOTIFICATION,
  CandidateNote,
  PROGRESS_NOTIFICATION,
  ProgressNote,
  RUN_FINISHED_NOTIFICATION,
  RunFinishedNote,
} from "./protocol";
import { candidateLine, SearchTracker } from "./searches";

// `any`: each handler types its own payload.
type NotificationHook = (method: string, handler: (params: any) => void) => unknown;

/** The server's notifications feed the search tracker (status bar, candidates) and the output channel. */
export function wireNotifications(on: NotificationHook, tracker: SearchTracker, output: Log): void {
  on(CANDIDATE_NOTIFICATION, (note: CandidateNote) => {
    tracker.onCandidate(note);
    output.appendLine(`[${tracker.get(note.jobId)?.op ?? note.jobId}] ${candidateLine(note)}`);
  });
  on(RUN_FINISHED_NOTIFICATION, (note: RunFinishedNote) => {
    tracker.onRunFinished(note);
    const s = tracker.get(note.jobId);
    output.appendLine(
      `[${s?.op ?? note.jobId}] ${note.status}: ${note.evaluated} evaluated${note.reason ? ` (${note.reason})` : ""}`,
    );
  });
  on(PROGRESS_NOTIFICATION, (note: ProgressNote) => tracker.onProgress(note));
}

