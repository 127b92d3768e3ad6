// The server's custom protocol (docs/editor.md, server/lsp/protocol.py): keep the three in step.

export const SERVER_COMMANDS = {
  evolve: "kernelEvolve.evolve",
  cancel: "kernelEvolve.cancel",
  applyBest: "kernelEvolve.applyBest",
  showDiff: "kernelEvolve.showDiff",
  showHistory: "kernelEvolve.showHistory",
  listJobs: "kernelEvolve.listJobs",
} as const;

export const CANDIDATE_NOTIFICATION = "kernelEvolve/candidate";
export const RUN_FINISHED_NOTIFICATION = "kernelEvolve/runFinished";
export const PROGRESS_NOTIFICATION = "kernelEvolve/progress";

export type Timing = "measured" | "modelled";

/** `kernelEvolve/candidate`: one per evaluated candidate. */
export interface CandidateNote {
  uri: string;
  jobId: string;
  runId: number | null;
  candidateId: number;
  parentId: number | null;
  operator: string;
  step: number;
  verdict: string;
  stage: string | null;
  reason: string | null;
  speedup: number | null;
  timing: Timing | null;
  device: string;
  diff: string;
  isBest: boolean;
  bestSpeedup: number | null;
}

/** `kernelEvolve/runFinished`. */
export interface RunFinishedNote {
  uri: string;
  jobId: string;
  runId: number | null;
  status: "finished" | "cancelled" | "failed" | string;
  reason: string;
  evaluated: number;
  bestCandidateId: number | null;
  bestSpeedup: number | null;
  timing: Timing | null;
  device: string | null;
  kernelPath: string | null;
}

/** `kernelEvolve/progress` (only for clients without work-done progress). */
export interface ProgressNote {
  token: string;
  jobId: string;
  kind: "begin" | "report" | "end";
  title?: string;
  message?: string;
  percentage?: number;
}

/** Result of `kernelEvolve.evolve`. */
export interface EvolveResult {
  jobId: string;
  token: string;
  problemPath: string;
  op: string;
  joined: boolean;
  inputsFrom?: string;
}

export interface PlannedFile {
  uri: string;
  diff: string;
  newText: string;
}

/** Result of `kernelEvolve.showDiff`. */
export interface ShowDiffResult {
  candidateId: number;
  files: PlannedFile[];
}

export interface HistoryEntry {
  candidateId: number;
  runId: number;
  speedup: number | null;
  timing: Timing | null;
  device: string | null;
  date: string | null;
  perShape?: { inputSet: string; shapes: number[][]; speedup: number | null }[];
  stale?: boolean;
  staleReason?: string | null;
}

/** Result of `kernelEvolve.showHistory`. */
export interface ShowHistoryResult {
  op: string;
  problemPath: string;
  entries: HistoryEntry[];
}

/** Result of `kernelEvolve.applyBest`. */
export interface ApplyBestResult {
  applied: boolean;
  failureReason?: string | null;
  candidateId: number;
  files: string[];
}

/** `⚡ 2.30× measured H200` / `≈1.42× modelled H200`, the server's own label style. */
export function speedupLabel(speedup: number, timing: Timing | null | undefined, device: string | null): string {
  const where = device ?? "?";
  return timing === "measured"
    ? `⚡ ${speedup.toFixed(2)}× measured ${where}`
    : `≈${speedup.toFixed(2)}× modelled ${where}`;
}
