// Candidate diffs in the editor: virtual documents (scheme `kernelevolve`) served by a
// TextDocumentContentProvider, shown side by side with `vscode.diff` or as a unified diff.

import * as vscode from "vscode";
import { CandidateNote, ShowDiffResult } from "./protocol";
import { candidateLine } from "./searches";

export const SCHEME = "kernelevolve";

export interface DiffPair {
  /** Left side: the file on disk, or an empty virtual document when it does not exist yet. */
  left: string;
  /** Right side: a virtual document holding what the candidate would write. */
  right: string;
  rightText: string;
  title: string;
}

function basename(uri: string): string {
  const last = uri.split("/").pop() ?? "file.py";
  return decodeURIComponent(last) || "file.py";
}

/** What to diff for a `kernelEvolve.showDiff` answer (pure: `exists` says what is on disk). */
export function diffPairs(result: ShowDiffResult, exists: (fileUri: string) => boolean): DiffPair[] {
  return result.files.map((file) => {
    const name = basename(file.uri);
    const onDisk = exists(file.uri);
    return {
      left: onDisk ? file.uri : `${SCHEME}:/empty/${result.candidateId}/${name}`,
      right: `${SCHEME}:/proposed/${result.candidateId}/${name}`,
      rightText: file.newText,
      title: `${name}: ${onDisk ? "on disk" : "new file"} ↔ kernel #${result.candidateId}`,
    };
  });
}

/** The unified diff of one streamed candidate, with a header saying what it is. */
export function candidateDiffText(note: CandidateNote): string {
  const header = [`# kernelevolve ${candidateLine(note)}`];
  if (note.parentId !== null) header.push(`# diff against candidate #${note.parentId}`);
  else header.push("# a first draft: diff against an empty file");
  // The full reason when it is longer than the one line candidateLine shows.
  if (note.verdict !== "correct" && note.reason && note.reason.includes("\n")) {
    header.push(...note.reason.split("\n").map((l) => `# ${l}`));
  }
  return `${header.join("\n")}\n${note.diff || "# (no textual change)\n"}`;
}

export function candidateDiffUri(note: CandidateNote): string {
  return `${SCHEME}:/candidate/${note.candidateId}/candidate-${note.candidateId}.diff`;
}

/** Serves the texts of our virtual documents; `set` before opening. */
export class VirtualDocuments implements vscode.TextDocumentContentProvider {
  private readonly texts = new Map<string, string>();
  private readonly emitter = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.emitter.event;

  set(uri: string, text: string): vscode.Uri {
    const parsed = vscode.Uri.parse(uri);
    const key = parsed.toString();
    const changed = this.texts.has(key) && this.texts.get(key) !== text;
    this.texts.set(key, text);
    if (changed) this.emitter.fire(parsed);
    return parsed;
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.toString()) ?? "";
  }

  dispose(): void {
    this.emitter.dispose();
  }
}

/** Opens the side-by-side diffs of what applying a kernel would write. */
export async function showPlannedFiles(docs: VirtualDocuments, result: ShowDiffResult, exists: (u: string) => boolean): Promise<void> {
  for (const pair of diffPairs(result, exists)) {
    const right = docs.set(pair.right, pair.rightText);
    const left = pair.left.startsWith(`${SCHEME}:`) ? docs.set(pair.left, "") : vscode.Uri.parse(pair.left);
    await vscode.commands.executeCommand("vscode.diff", left, right, pair.title, { preview: true });
  }
}

/** Opens one streamed candidate's unified diff (works for rejected candidates too). */
export async function showCandidateDiff(docs: VirtualDocuments, note: CandidateNote): Promise<void> {
  const uri = docs.set(candidateDiffUri(note), candidateDiffText(note));
  const doc = await vscode.workspace.openTextDocument(uri);
  await vscode.languages.setTextDocumentLanguage(doc, "diff");
  await vscode.window.showTextDocument(doc, { preview: true });
}
