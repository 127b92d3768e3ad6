// What the client knows about kernel searches, built from the server's notifications and the
// evolve command's answer. Pure: the status bar and the diff view render from it.

import {
  CandidateNote,
  EvolveResult,
  ProgressNote,
  RunFinishedNote,
  Timing,
  speedupLabel,
} from "./protocol";

export interface Best {
  candidateId: number;
  speedup: number;
  timing: Timing | null;
  device: string | null;
}

export interface SearchState {
  jobId: string;
  uri: string;
  op: string;
  running: boolean;
  status: string; // running | finished | cancelled | failed
  reason: string;
  runId: number | null;
  evaluated: number;
  best: Best | null;
  progressMessage: string | null;
  candidates: CandidateNote[]; // in arrival order
}

export type Listener = () => void;

/** Most candidates kept per search: their diffs stay viewable, memory stays bounded. */
export const MAX_CANDIDATES_KEPT = 200;

export class SearchTracker {
  private readonly searches = new Map<string, SearchState>();
  private readonly listeners: Listener[] = [];

  onDidChange(listener: Listener): { dispose(): void } {
    this.listeners.push(listener);
    return {
      dispose: () => {
        const i = this.listeners.indexOf(listener);
        if (i >= 0) this.listeners.splice(i, 1);
      },
    };
  }

  all(): SearchState[] {
    return [...this.searches.values()];
  }

  running(): SearchState[] {
    return this.all().filter((s) => s.running);
  }

  get(jobId: string): SearchState | undefined {
    return this.searches.get(jobId);
  }

  /** The most recently started search (running ones first). */
  latest(): SearchState | undefined {
    const running = this.running();
    const pool = running.length > 0 ? running : this.all();
    return pool[pool.length - 1];
  }

  candidate(candidateId: number): CandidateNote | undefined {
    for (const search of this.searches.values()) {
      const found = search.candidates.find((c) => c.candidateId === candidateId);
      if (found) return found;
    }
    return undefined;
  }

  started(uri: string, result: EvolveResult): SearchState {
    const state = this.ensure(result.jobId, uri, result.op);
    state.op = result.op;
    this.changed();
    return state;
  }

  onCandidate(note: CandidateNote): void {
    const state = this.ensure(note.jobId, note.uri);
    state.evaluated += 1;
    state.runId = note.runId ?? state.runId;
    state.candidates.push(note);
    if (state.candidates.length > MAX_CANDIDATES_KEPT) state.candidates.shift();
    const correct = note.verdict === "correct" && note.speedup !== null;
    if (correct && (state.best === null || note.speedup! > state.best.speedup)) {
      state.best = { candidateId: note.candidateId, speedup: note.speedup!, timing: note.timing, device: note.device };
    }
    this.changed();
  }

  onProgress(note: ProgressNote): void {
    const state = this.ensure(note.jobId, "");
    if (note.message) state.progressMessage = note.message;
    this.changed();
  }

  onRunFinished(note: RunFinishedNote): void {
    const state = this.ensure(note.jobId, note.uri);
    state.running = false;
    state.status = note.status;
    state.reason = note.reason ?? "";
    state.runId = note.runId ?? state.runId;
    state.evaluated = Math.max(state.evaluated, note.evaluated);
    if (note.bestCandidateId !== null && note.bestSpeedup !== null) {
      state.best = {
        candidateId: note.bestCandidateId,
        speedup: note.bestSpeedup,
        timing: note.timing,
        device: note.device,
      };
    }
    this.changed();
  }

  /** The server went away: nothing it ran is running any more. */
  serverStopped(): void {
    for (const state of this.searches.values()) {
      if (state.running) {
        state.running = false;
        state.status = "cancelled";
        state.reason = "the language server stopped";
      }
    }
    this.changed();
  }

  private ensure(jobId: string, uri: string, op?: string): SearchState {
    let state = this.searches.get(jobId);
    if (!state) {
      state = {
        jobId,
        uri,
        op: op ?? opFromUri(uri),
        running: true,
        status: "running",
        reason: "",
        runId: null,
        evaluated: 0,
        best: null,
        progressMessage: null,
        candidates: [],
      };
      this.searches.set(jobId, state);
    } else if (!state.uri && uri) {
      state.uri = uri;
    }
    return state;
  }

  private changed(): void {
    for (const listener of [...this.listeners]) listener();
  }
}

function opFromUri(uri: string): string {
  const last = uri.split("/").pop() ?? "";
  return decodeURIComponent(last) || "kernel";
}

export function bestLabel(best: Best | null): string {
  return best ? speedupLabel(best.speedup, best.timing, best.device) : "no correct kernel yet";
}

export interface StatusView {
  text: string;
  tooltip: string;
  visible: boolean;
}

/** The status bar's text: running searches with their best so far, else the last result. */
export function statusView(tracker: SearchTracker): StatusView {
  const running = tracker.running();
  if (running.length === 1) {
    const s = running[0];
    return {
      text: `$(sync~spin) ${s.op}: ${s.evaluated} evaluated · ${s.best ? bestLabel(s.best) : "searching"}`,
      tooltip: searchTooltip(s),
      visible: true,
    };
  }
  if (running.length > 1) {
    const evaluated = running.reduce((n, s) => n + s.evaluated, 0);
    return {
      text: `$(sync~spin) ${running.length} kernel searches · ${evaluated} evaluated`,
      tooltip: running.map(searchTooltip).join("\n\n"),
      visible: true,
    };
  }
  const last = tracker.latest();
  if (!last) {
    return { text: "", tooltip: "", visible: false };
  }
  const icon = last.status === "finished" ? "$(check)" : last.status === "failed" ? "$(error)" : "$(circle-slash)";
  return {
    text: `${icon} ${last.op}: ${bestLabel(last.best)}`,
    tooltip: searchTooltip(last),
    visible: true,
  };
}

export function searchTooltip(s: SearchState): string {
  const lines = [
    `kernelevolve · ${s.op} (job ${s.jobId}${s.runId !== null ? `, run ${s.runId}` : ""})`,
    `${s.status}: ${s.evaluated} evaluated, best ${bestLabel(s.best)}`,
  ];
  if (s.progressMessage && s.running) lines.push(s.progressMessage);
  if (s.reason && !s.running) lines.push(s.reason);
  return lines.join("\n");
}

/** One line per candidate for the output channel and the candidate picker. */
export function candidateLine(c: CandidateNote): string {
  const speed = c.speedup !== null ? speedupLabel(c.speedup, c.timing, c.device) : c.verdict;
  const why = c.verdict !== "correct" && c.reason ? ` (${c.stage ?? "?"}: ${firstLine(c.reason)})` : "";
  const best = c.isBest ? " ★ best" : "";
  return `#${c.candidateId} ${c.verdict} ${c.speedup !== null ? speed : ""}${why}${best} · ${c.operator}, step ${c.step}`
    .replace(/\s+/g, " ")
    .trim();
}

function firstLine(text: string): string {
  const line = text.split("\n")[0];
  return line.length > 120 ? `${line.slice(0, 117)}…` : line;
}
