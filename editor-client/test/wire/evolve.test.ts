// The whole editor loop against the REAL Python server and engine, driven with VS Code's
// capabilities through vscode-jsonrpc, with the extension's own code (commands, tracker, status
// bar text, diff documents) on the client side: code action -> evolve -> work-done progress ->
// kernelEvolve/candidate -> runFinished -> inlay hint -> hover -> show diff -> apply -> shutdown.
// A two-step budget from a seed kernel keeps the search to about a minute on a 2-core CPU.

import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { after, before, test } from "node:test";
import * as vscode from "vscode";
import { Commands, ServerLink } from "../../src/commands";
import { SCHEME, VirtualDocuments } from "../../src/diffView";
import { wireNotifications } from "../../src/notifications";
import { CandidateNote, EvolveResult, RunFinishedNote, SERVER_COMMANDS } from "../../src/protocol";
import { SearchTracker, statusView } from "../../src/searches";
import { serverSettings } from "../../src/settings";
import { pythonEditor, stub } from "../stub/vscode";
import { REPO, Session, startSession } from "./session";

const EXAMPLE = path.join(REPO, "examples", "fused_elementwise");
const SMALL = { maxSteps: 2, draftSize: 1, patience: 2, parallel: 1, timeBudgetS: 400 };
const SEARCH_TIMEOUT_MS = 420_000;

let session: Session;
let root: string;
let modelLine: number;
const tracker = new SearchTracker();
const docs = new VirtualDocuments();
let commands: Commands;

before(async () => {
  stub.reset();
  root = fs.mkdtempSync(path.join(os.tmpdir(), "ke-wire-"));
  fs.copyFileSync(path.join(EXAMPLE, "problem.py"), path.join(root, "problem.py"));
  fs.copyFileSync(path.join(EXAMPLE, "candidate.py"), path.join(root, "seed_kernel.py"));
  modelLine = fs.readFileSync(path.join(root, "problem.py"), "utf8").split("\n").findIndex((l) => l.startsWith("class Model"));
  // What the extension sends: its own settings mapping over a VS Code configuration.
  const userConfig: Record<string, unknown> = { ...SMALL, interpreter: ["/ignored/python"], trace: { server: "off" } };
  const settings = serverSettings({ get: <T>(k: string) => userConfig[k] as T | undefined });
  const log = { appendLine: (l: string) => stub.outputLines.push(l) };
  session = await startSession(root, { settings }, userConfig);
  wireNotifications((method, handler) => session.on(method, handler), tracker, log);
  const link: ServerLink = {
    execute: (command, arg) => session.conn.sendRequest("workspace/executeCommand", { command, arguments: arg ? [arg] : [] }),
  };
  vscode.workspace.registerTextDocumentContentProvider(SCHEME, docs);
  commands = new Commands(() => link, tracker, docs, log, (u) => fs.existsSync(new URL(u)));
});

after(async () => {
  if (session && session.proc.exitCode === null) session.proc.kill("SIGKILL");
});

test("initialize advertises the commands the extension's code actions run", () => {
  const provider = session.init.capabilities.executeCommandProvider;
  assert.ok(provider);
  for (const id of Object.values(SERVER_COMMANDS)) assert.ok(provider.commands.includes(id), id);
  assert.equal(session.init.serverInfo?.name, "kernelevolve");
});

test("evolve from the code action streams candidates, progress and a finished run", async () => {
  const uri = session.open("problem.py");
  const actions = (await session.conn.sendRequest("textDocument/codeAction", {
    textDocument: { uri },
    range: { start: { line: modelLine + 2, character: 0 }, end: { line: modelLine + 2, character: 0 } },
    context: { diagnostics: [] },
  })) as { title: string; kind: string; command?: { command: string; arguments: object[] } }[];
  const evolve = actions.find((a) => a.title.startsWith("Evolve kernel"));
  assert.ok(evolve?.command, JSON.stringify(actions));
  assert.equal(evolve.title, "Evolve kernel: Model");
  assert.equal(evolve.kind, "refactor.rewrite");

  // VS Code runs the action's command through the client library; our middleware sees the answer.
  const args = [{ ...evolve.command.arguments[0], seedPath: "seed_kernel.py" }];
  const started = (await session.conn.sendRequest("workspace/executeCommand", {
    command: evolve.command.command,
    arguments: args,
  })) as EvolveResult;
  commands.afterServerCommand(evolve.command.command, args, started);
  assert.equal(started.joined, false);
  assert.equal(started.op, "Model");
  assert.equal(fs.realpathSync(started.problemPath), fs.realpathSync(path.join(root, "problem.py")));
  assert.match(statusView(tracker).text, /^\$\(sync~spin\) Model: /);

  await session.waitFor("kernelEvolve/runFinished", () => session.notes("kernelEvolve/runFinished").length > 0, SEARCH_TIMEOUT_MS);
  const [finished] = session.notes("kernelEvolve/runFinished") as RunFinishedNote[];
  const candidates = session.notes("kernelEvolve/candidate") as CandidateNote[];
  assert.equal(finished.status, "finished", finished.reason);
  assert.equal(finished.jobId, started.jobId);
  assert.equal(finished.evaluated, candidates.length);
  assert.ok(candidates.length >= 1 && candidates.length <= SMALL.maxSteps);

  const first = candidates[0];
  assert.equal(first.uri, uri);
  assert.equal(first.runId, finished.runId);
  assert.equal(first.verdict, "correct", first.reason ?? "");
  assert.equal(first.timing, "modelled");
  assert.equal(first.device, "H200");
  assert.ok(typeof first.speedup === "number" && first.speedup > 0);
  assert.match(first.diff, /\+class ModelNew/);
  const best = candidates.find((c) => c.candidateId === finished.bestCandidateId);
  assert.ok(best, "the finished run's best is one of the streamed candidates");
  assert.equal(finished.bestSpeedup, Math.max(...candidates.filter((c) => c.verdict === "correct").map((c) => c.speedup!)));

  // Work-done progress on the token the evolve command returned, created by the server first.
  const created = session.seen.requests.filter((r) => r.method === "window/workDoneProgress/create");
  assert.deepEqual(created.map((r) => r.params.token), [started.token]);
  const kinds = session.notes("$/progress").filter((p) => p.token === started.token).map((p) => p.value.kind);
  assert.equal(kinds[0], "begin");
  assert.ok(kinds.includes("report"));
  assert.equal(kinds[kinds.length - 1], "end");
  assert.ok(session.seen.requests.some((r) => r.method === "workspace/inlayHint/refresh"));

  // The extension's view of it: status bar and log lines from the same notifications.
  const view = statusView(tracker);
  assert.equal(view.text, `$(check) Model: ≈${finished.bestSpeedup!.toFixed(2)}× modelled H200`);
  assert.ok(stub.outputLines.some((l) => l.startsWith(`[Model] #${first.candidateId} correct ≈`)), stub.outputLines.join("\n"));

  // The configuration the server pulled went through the extension's filter: no unknown keys.
  const shown = session.notes("window/showMessage").map((m) => m.message as string);
  assert.ok(!shown.some((m) => m.includes("unknown setting")), shown.join("\n"));
  assert.ok(session.seen.requests.some((r) => r.method === "workspace/configuration"));
});

test("after the run, the inlay hint and hover at the op show the best kernel", async () => {
  const uri = session.uriOf("problem.py");
  const [finished] = session.notes("kernelEvolve/runFinished") as RunFinishedNote[];
  const hints = (await session.conn.sendRequest("textDocument/inlayHint", {
    textDocument: { uri },
    range: { start: { line: 0, character: 0 }, end: { line: 200, character: 0 } },
  })) as { position: { line: number }; label: string }[];
  assert.equal(hints.length, 1);
  assert.equal(hints[0].position.line, modelLine);
  assert.equal(hints[0].label, `≈${finished.bestSpeedup!.toFixed(2)}× modelled H200`);
  const hover = (await session.conn.sendRequest("textDocument/hover", {
    textDocument: { uri },
    position: { line: modelLine, character: 7 },
  })) as { contents: { kind: string; value: string } };
  assert.equal(hover.contents.kind, "markdown");
  assert.ok(hover.contents.value.includes(`#${finished.bestCandidateId}`), hover.contents.value);
  assert.ok(hover.contents.value.includes("modelled"));
});

test("show best diff opens vscode.diff against the new kernel file; apply writes exactly that", async () => {
  vscode.window.activeTextEditor = pythonEditor(session.uriOf("problem.py"), modelLine) as unknown as vscode.TextEditor;
  const planned = await commands.showBestDiff();
  assert.ok(planned, stub.calls.map((c) => JSON.stringify(c.args[0])).join("\n"));
  const [finished] = session.notes("kernelEvolve/runFinished") as RunFinishedNote[];
  assert.equal(planned.candidateId, finished.bestCandidateId);
  const names = planned.files.map((f) => path.basename(new URL(f.uri).pathname)).sort();
  assert.deepEqual(names, ["problem_dispatch.py", "problem_evolved.py"]);
  await new Promise((r) => setTimeout(r, 50)); // afterServerCommand opens the diff views without awaiting
  const diffs = stub.called("commands.executeCommand:vscode.diff");
  assert.equal(diffs.length, 2);
  for (const call of diffs) {
    const [left, right, title] = call.args as [vscode.Uri, vscode.Uri, string];
    const file = planned.files.find((f) => docs.provideTextDocumentContent(right) === f.newText);
    assert.ok(file, `the right side of ${title} is a planned file's text`);
    // The engine already wrote the run's best beside the problem; the dispatch wrapper is new.
    const onDisk = fs.existsSync(new URL(file.uri));
    assert.equal(left.scheme, onDisk ? "file" : SCHEME);
    assert.match(title, onDisk ? /on disk ↔ kernel #\d+$/ : /new file ↔ kernel #\d+$/);
  }
  const kernel = planned.files.find((f) => f.uri.endsWith("problem_evolved.py"))!;
  assert.match(kernel.newText, /@triton\.jit/);

  const applied = await commands.applyBestKernel();
  assert.ok(applied?.applied, JSON.stringify(applied));
  for (const f of planned.files) {
    assert.equal(fs.readFileSync(new URL(f.uri), "utf8"), f.newText, `${f.uri} on disk is what the diff showed`);
  }
  assert.match(String(stub.called("window.showInformationMessage").at(-1)?.args[0]), /applied kernel #\d+/);
});

test("show history lists the run's best and opens its diff", async () => {
  stub.quickPick = (items) => items[0];
  const history = await commands.showHistory();
  assert.ok(history && history.entries.length >= 1);
  const [finished] = session.notes("kernelEvolve/runFinished") as RunFinishedNote[];
  assert.equal(history.entries[0].candidateId, finished.bestCandidateId);
  const picks = stub.called("window.showQuickPick");
  const items = picks.at(-1)!.args[0] as { label: string }[];
  assert.match(items[0].label, new RegExp(`^#${finished.bestCandidateId} ≈\\d+\\.\\d\\d× modelled H200`));
});

test("shutdown ends a server with no search running cleanly", async () => {
  assert.equal(await session.close(), 0);
});
