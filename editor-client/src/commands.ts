// The extension's commands: thin handlers that ask the server and show its answers.

import * as vscode from "vscode";
import { showCandidateDiff, showPlannedFiles, VirtualDocuments } from "./diffView";
import {
  ApplyBestResult,
  CandidateNote,
  EvolveResult,
  SERVER_COMMANDS,
  ShowDiffResult,
  ShowHistoryResult,
  speedupLabel,
} from "./protocol";
import { candidateLine, SearchTracker } from "./searches";

/** The extension's own command ids (the server's `kernelEvolve.*` ones are registered by the client library). */
export const CLIENT_COMMANDS = {
  evolve: "kernelevolve.evolveKernel",
  cancel: "kernelevolve.cancelSearch",
  applyBest: "kernelevolve.applyBestKernel",
  showHistory: "kernelevolve.showHistory",
  restart: "kernelevolve.restartServer",
  showBestDiff: "kernelevolve.showBestDiff",
  showCandidates: "kernelevolve.showCandidates",
  showOutput: "kernelevolve.showOutput",
} as const;

/** How commands reach the server: `workspace/executeCommand` with one object argument. */
export interface ServerLink {
  execute(command: string, arg?: object): Promise<unknown>;
}

export interface Log {
  appendLine(line: string): void;
}

export class Commands {
  constructor(
    private readonly link: () => ServerLink | undefined,
    readonly tracker: SearchTracker,
    private readonly docs: VirtualDocuments,
    private readonly log: Log,
    private readonly fileExists: (fileUri: string) => boolean,
  ) {}

  async evolveKernel(): Promise<EvolveResult | undefined> {
    const at = this.cursor();
    if (!at) return undefined;
    const editor = at.editor;
    const sel = editor.selection;
    const arg = {
      uri: at.uri,
      range: {
        start: { line: sel.start.line, character: sel.start.character },
        end: { line: sel.end.line, character: sel.end.character },
      },
    };
    const result = (await this.ask(SERVER_COMMANDS.evolve, arg)) as EvolveResult | undefined;
    if (result) this.afterServerCommand(SERVER_COMMANDS.evolve, [arg], result);
    return result;
  }

  async cancelSearch(): Promise<string[] | undefined> {
    const running = this.tracker.running();
    if (running.length === 0) {
      void vscode.window.showInformationMessage("kernelevolve: no kernel search is running.");
      return undefined;
    }
    let jobId: string | undefined = running[0].jobId;
    if (running.length > 1) {
      const picked = await vscode.window.showQuickPick(
        running.map((s) => ({ label: s.op, description: `${s.evaluated} evaluated`, jobId: s.jobId })),
        { placeHolder: "Cancel which kernel search?" },
      );
      jobId = picked?.jobId;
    }
    if (!jobId) return undefined;
    const result = (await this.ask(SERVER_COMMANDS.cancel, { jobId })) as { cancelled: string[] } | undefined;
    return result?.cancelled;
  }

  async applyBestKernel(): Promise<ApplyBestResult | undefined> {
    const at = this.cursor();
    if (!at) return undefined;
    const arg = { uri: at.uri, line: at.editor.selection.active.line };
    const result = (await this.ask(SERVER_COMMANDS.applyBest, arg)) as ApplyBestResult | undefined;
    if (result) this.afterServerCommand(SERVER_COMMANDS.applyBest, [arg], result);
    return result;
  }

  async showBestDiff(): Promise<ShowDiffResult | undefined> {
    const at = this.cursor();
    if (!at) return undefined;
    const arg = { uri: at.uri, line: at.editor.selection.active.line };
    const result = (await this.ask(SERVER_COMMANDS.showDiff, arg)) as ShowDiffResult | undefined;
    if (result) this.afterServerCommand(SERVER_COMMANDS.showDiff, [arg], result);
    return result;
  }

  async showHistory(): Promise<ShowHistoryResult | undefined> {
    const at = this.cursor();
    if (!at) return undefined;
    const arg = { uri: at.uri, line: at.editor.selection.active.line };
    const history = (await this.ask(SERVER_COMMANDS.showHistory, arg)) as ShowHistoryResult | undefined;
    if (!history) return undefined;
    if (history.entries.length === 0) {
      void vscode.window.showInformationMessage(`kernelevolve: no kernel in history for ${history.op} yet.`);
      return history;
    }
    const picked = await vscode.window.showQuickPick(
      history.entries.map((e) => ({
        label: `#${e.candidateId} ${e.speedup !== null ? speedupLabel(e.speedup, e.timing, e.device) : "-"}${e.stale ? " (stale)" : ""}`,
        description: `run ${e.runId}${e.date ? ` · ${e.date}` : ""}`,
        detail: (e.perShape ?? [])
          .map((t) => `${t.inputSet} ${(t.shapes[0] ?? []).join("×")}: ${t.speedup !== null ? `${t.speedup.toFixed(2)}×` : "-"}`)
          .join(" · "),
        candidateId: e.candidateId,
      })),
      { placeHolder: `${history.op}: kernels in history (pick one to see its diff)` },
    );
    if (picked) {
      const diff = (await this.ask(SERVER_COMMANDS.showDiff, { candidateId: picked.candidateId, uri: at.uri })) as
        | ShowDiffResult
        | undefined;
      if (diff) await showPlannedFiles(this.docs, diff, this.fileExists);
    }
    return history;
  }

  /** A quick pick of the latest search's candidates, newest first; picking one shows its diff. */
  async showCandidates(jobId?: string): Promise<CandidateNote | undefined> {
    const search = jobId ? this.tracker.get(jobId) : this.tracker.latest();
    if (!search || search.candidates.length === 0) {
      void vscode.window.showInformationMessage("kernelevolve: no candidates yet: run Evolve kernel first.");
      return undefined;
    }
    const picked = await vscode.window.showQuickPick(
      [...search.candidates].reverse().map((c) => ({ label: candidateLine(c), note: c })),
      { placeHolder: `${search.op}: candidates (correct ones open beside the file they would replace)` },
    );
    if (picked) await this.showCandidate(picked.note);
    return picked?.note;
  }

  /** Correct: side by side with what applying it would write; rejected: its diff against its parent. */
  async showCandidate(note: CandidateNote): Promise<void> {
    if (note.verdict === "correct") {
      const diff = (await this.ask(SERVER_COMMANDS.showDiff, { candidateId: note.candidateId, uri: note.uri })) as
        | ShowDiffResult
        | undefined;
      if (diff) {
        await showPlannedFiles(this.docs, diff, this.fileExists);
        return;
      }
    }
    await showCandidateDiff(this.docs, note);
  }

  /** Reacts to a server command's answer, whether we sent it or a code action did. */
  afterServerCommand(command: string, args: unknown[], result: unknown): void {
    if (!result || typeof result !== "object") return;
    if (command === SERVER_COMMANDS.evolve) {
      const started = result as EvolveResult;
      const uri = uriOf(args);
      this.tracker.started(uri, started);
      this.log.appendLine(
        `${started.joined ? "Following" : "Evolving"} ${started.op} (job ${started.jobId}): ${started.problemPath}`,
      );
      if (started.joined) {
        void vscode.window.showInformationMessage(`kernelevolve: ${started.op} is already being evolved; following it.`);
      }
    } else if (command === SERVER_COMMANDS.showDiff) {
      void showPlannedFiles(this.docs, result as ShowDiffResult, this.fileExists);
    } else if (command === SERVER_COMMANDS.applyBest) {
      const applied = result as ApplyBestResult;
      const names = applied.files.map((f) => decodeURIComponent(f.split("/").pop() ?? f)).join(", ");
      if (applied.applied) {
        this.log.appendLine(`Applied kernel #${applied.candidateId}: ${names}`);
        void vscode.window.showInformationMessage(`kernelevolve: applied kernel #${applied.candidateId} (${names}); undo reverts it.`);
      } else {
        void vscode.window.showWarningMessage(
          `kernelevolve: kernel #${applied.candidateId} was not applied${applied.failureReason ? `: ${applied.failureReason}` : ""}.`,
        );
      }
    }
  }

  private cursor(): { editor: vscode.TextEditor; uri: string } | undefined {
    const editor = vscode.window.activeTextEditor;
    if (!editor || editor.document.languageId !== "python") {
      void vscode.window.showWarningMessage(
        "kernelevolve: open a Python file and put the cursor on an nn.Module or function first.",
      );
      return undefined;
    }
    return { editor, uri: editor.document.uri.toString() };
  }

  private async ask(command: string, arg: object): Promise<unknown> {
    const link = this.link();
    if (!link) {
      void vscode.window.showErrorMessage("kernelevolve: the language server is not running (see the output channel).");
      return undefined;
    }
    try {
      return await link.execute(command, arg);
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      this.log.appendLine(`${command} failed: ${message}`);
      void vscode.window.showErrorMessage(`kernelevolve: ${message}`);
      return undefined;
    }
  }
}

function uriOf(args: unknown[]): string {
  const first = args[0] as { uri?: unknown } | undefined;
  return typeof first?.uri === "string" ? first.uri : "";
}
