import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { beforeEach, test } from "node:test";
import * as vscode from "vscode";
import type { ClientParts } from "../../src/client";
import { CLIENT_COMMANDS, Commands, ServerLink } from "../../src/commands";
import { candidateDiffText, diffPairs, SCHEME, showPlannedFiles, VirtualDocuments } from "../../src/diffView";
import { ClientFactory, KernelEvolveExtension, RESTART_DELAY_MS } from "../../src/extension";
import { CandidateNote, SERVER_COMMANDS, ShowDiffResult } from "../../src/protocol";
import { SearchTracker } from "../../src/searches";
import { pythonEditor, stub } from "../stub/vscode";

// `vscode` is the stub here (test/stub/hook.ts); this import only proves the alias works.
assert.equal(typeof vscode.Uri.parse, "function");

beforeEach(() => stub.reset());

interface FakeClient {
  parts: ClientParts;
  started: number;
  stopped: number;
}

/** A client factory that records what the extension would launch; `fail` makes start() throw. */
function recordingFactory(made: FakeClient[], fail = false): ClientFactory {
  return (parts) => {
    const fake: FakeClient = { parts, started: 0, stopped: 0 };
    made.push(fake);
    let running = false;
    return {
      client: {
        start: async () => {
          fake.started++;
          if (fail) throw new Error("spawn python3 ENOENT");
          running = true;
        },
        stop: async () => {
          fake.stopped++;
          running = false;
        },
        isRunning: () => running,
      },
      link: { execute: async () => undefined },
    };
  };
}

function workspace(): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "ke-ext-"));
  fs.mkdirSync(path.join(root, ".venv", "bin"), { recursive: true });
  fs.writeFileSync(path.join(root, ".venv", "bin", "python"), "");
  stub.workspaceFolders = [{ uri: vscode.Uri.file(root), name: "w", index: 0 }];
  return root;
}

test("activation registers every contributed command, the diff scheme and a hidden status item", async () => {
  const root = workspace();
  const made: FakeClient[] = [];
  const ext = new KernelEvolveExtension(recordingFactory(made));
  assert.equal(await ext.start(), true);
  assert.deepEqual(new Set(stub.commands.keys()), new Set(Object.values(CLIENT_COMMANDS)));
  assert.ok(stub.providers.has(SCHEME));
  assert.equal(stub.statusItems[0].visible, false);
  assert.equal(made.length, 1);
  assert.deepEqual(made[0].parts.interpreter, {
    command: [path.join(root, ".venv", "bin", "python")],
    source: "workspace-venv",
  });
  assert.equal(made[0].parts.cwd, root);
  ext.dispose();
  assert.equal(stub.commands.size, 0, "dispose unregisters the commands");
});

test("server settings from the configuration go into the client, client-only ones do not", async () => {
  workspace();
  stub.config = { "kernelEvolve.maxSteps": 2, "kernelEvolve.llmModel": null, "kernelEvolve.interpreter": ["/py"] };
  const made: FakeClient[] = [];
  const ext = new KernelEvolveExtension(recordingFactory(made));
  await ext.start();
  assert.deepEqual(made[0].parts.settings, { maxSteps: 2, llmModel: null });
  assert.deepEqual(made[0].parts.interpreter, { command: ["/py"], source: "setting" });
  ext.dispose();
});

test("changing the interpreter restarts the server once, after the debounce", async () => {
  workspace();
  const made: FakeClient[] = [];
  const ext = new KernelEvolveExtension(recordingFactory(made));
  await ext.start();
  stub.changeConfiguration(["kernelEvolve.maxSteps"]);
  stub.config["kernelEvolve.interpreter"] = ["/other/python"];
  stub.changeConfiguration(["kernelEvolve.interpreter"]);
  stub.changeConfiguration(["kernelEvolve.interpreter"]);
  await new Promise((r) => setTimeout(r, RESTART_DELAY_MS + 300));
  assert.equal(made.length, 2);
  assert.equal(made[0].stopped, 1);
  assert.deepEqual(made[1].parts.interpreter.command, ["/other/python"]);
  ext.dispose();
});

test("a server that fails to start is reported with the interpreter it tried, and commands say so", async () => {
  const ext = new KernelEvolveExtension(recordingFactory([], true));
  assert.equal(await ext.start(), false);
  const [error] = stub.called("window.showErrorMessage");
  assert.match(String(error.args[0]), /did not start with python3 \(spawn python3 ENOENT\)/);
  window_editor("file:///w/model.py", 3);
  assert.equal(await ext.commands.evolveKernel(), undefined);
  assert.match(String(stub.called("window.showErrorMessage")[1].args[0]), /language server is not running/);
  ext.dispose();
});

function window_editor(uri: string, line: number, languageId = "python"): void {
  vscode.window.activeTextEditor = pythonEditor(uri, line, languageId) as unknown as vscode.TextEditor;
}

function commandsWith(link: ServerLink, tracker = new SearchTracker()): { commands: Commands; docs: VirtualDocuments } {
  const docs = new VirtualDocuments();
  vscode.workspace.registerTextDocumentContentProvider(SCHEME, docs);
  const log = { appendLine: (l: string) => stub.outputLines.push(l) };
  return { commands: new Commands(() => link, tracker, docs, log, (u) => u.endsWith("on_disk.py")), docs };
}

test("evolve sends the selection of the active Python editor and tracks the job it starts", async () => {
  const sent: [string, unknown][] = [];
  const link: ServerLink = {
    execute: async (command, arg) => {
      sent.push([command, arg]);
      return { jobId: "j1", token: "t", problemPath: "/w/p.py", op: "Model", joined: false };
    },
  };
  const { commands } = commandsWith(link);
  window_editor("file:///w/model.py", 12);
  const result = await commands.evolveKernel();
  assert.equal(result?.jobId, "j1");
  assert.deepEqual(sent, [
    [SERVER_COMMANDS.evolve, { uri: "file:///w/model.py", range: { start: { line: 12, character: 0 }, end: { line: 12, character: 0 } } }],
  ]);
  assert.equal(commands.tracker.running()[0].op, "Model");
});

test("evolve outside a Python editor asks for one and sends nothing", async () => {
  let sent = 0;
  const { commands } = commandsWith({ execute: async () => sent++ });
  assert.equal(await commands.evolveKernel(), undefined);
  window_editor("file:///w/notes.md", 0, "markdown");
  assert.equal(await commands.evolveKernel(), undefined);
  assert.equal(sent, 0);
  assert.equal(stub.called("window.showWarningMessage").length, 2);
});

test("a server error on evolve is shown with the server's own words", async () => {
  const { commands } = commandsWith({
    execute: async () => {
      throw new Error("no inputs for Model: add get_inputs() or a '# kernelevolve: inputs=' comment");
    },
  });
  window_editor("file:///w/model.py", 0);
  assert.equal(await commands.evolveKernel(), undefined);
  assert.match(String(stub.called("window.showErrorMessage")[0].args[0]), /^kernelevolve: no inputs for Model/);
});

test("cancel with nothing running says so; with two running it asks which", async () => {
  const sent: unknown[] = [];
  const tracker = new SearchTracker();
  const { commands } = commandsWith({ execute: async (_c, arg) => (sent.push(arg), { cancelled: ["b"] }) }, tracker);
  assert.equal(await commands.cancelSearch(), undefined);
  assert.equal(stub.called("window.showInformationMessage").length, 1);
  tracker.started("file:///w/a.py", { jobId: "a", token: "", problemPath: "", op: "A", joined: false });
  tracker.started("file:///w/b.py", { jobId: "b", token: "", problemPath: "", op: "B", joined: false });
  stub.quickPick = (items) => items[1];
  assert.deepEqual(await commands.cancelSearch(), ["b"]);
  assert.deepEqual(sent, [{ jobId: "b" }]);
});

const PLANNED: ShowDiffResult = {
  candidateId: 17,
  files: [
    { uri: "file:///w/on_disk.py", diff: "...", newText: "new kernel text\n" },
    { uri: "file:///w/model_dispatch.py", diff: "...", newText: "dispatch\n" },
  ],
};

test("diff pairs put a missing file against an empty document and name both sides", () => {
  const pairs = diffPairs(PLANNED, (u) => u.endsWith("on_disk.py"));
  assert.equal(pairs[0].left, "file:///w/on_disk.py");
  assert.equal(pairs[0].title, "on_disk.py: on disk ↔ kernel #17");
  assert.equal(pairs[1].left, `${SCHEME}:/empty/17/model_dispatch.py`);
  assert.equal(pairs[1].title, "model_dispatch.py: new file ↔ kernel #17");
});

test("showing planned files opens vscode.diff on documents the content provider serves", async () => {
  const docs = new VirtualDocuments();
  await showPlannedFiles(docs, PLANNED, (u) => u.endsWith("on_disk.py"));
  const diffs = stub.called("commands.executeCommand:vscode.diff");
  assert.equal(diffs.length, 2);
  const [left, right, title] = diffs[1].args as [vscode.Uri, vscode.Uri, string];
  assert.equal(docs.provideTextDocumentContent(right), "dispatch\n");
  assert.equal(docs.provideTextDocumentContent(left), "");
  assert.equal(title, "model_dispatch.py: new file ↔ kernel #17");
  assert.equal((diffs[0].args[0] as vscode.Uri).toString(), "file:///w/on_disk.py");
});

test("the applyBest answer from a code action is reported, including a refusal", () => {
  const { commands } = commandsWith({ execute: async () => undefined });
  commands.afterServerCommand(SERVER_COMMANDS.applyBest, [{}], {
    applied: true,
    candidateId: 3,
    files: ["file:///w/model_evolved.py", "file:///w/model_dispatch.py"],
  });
  commands.afterServerCommand(SERVER_COMMANDS.applyBest, [{}], { applied: false, failureReason: "file changed", candidateId: 3, files: [] });
  assert.match(String(stub.called("window.showInformationMessage")[0].args[0]), /applied kernel #3 \(model_evolved\.py, model_dispatch\.py\)/);
  assert.match(String(stub.called("window.showWarningMessage")[0].args[0]), /not applied: file changed/);
});

test("a rejected candidate opens as a unified diff document headed by why it failed", async () => {
  const note: CandidateNote = {
    uri: "file:///w/model.py", jobId: "j", runId: 1, candidateId: 5, parentId: 2, operator: "tuning", step: 3,
    verdict: "incorrect", stage: "correctness", reason: "max abs err 0.25 > atol", speedup: null, timing: null,
    device: "H200", diff: "--- a/k.py\n+++ b/k.py\n@@ -1 +1 @@\n-a\n+b\n", isBest: false, bestSpeedup: null,
  };
  const text = candidateDiffText(note);
  assert.match(text, /^# kernelevolve #5 incorrect \(correctness: max abs err 0\.25 > atol\)/);
  assert.match(text, /# diff against candidate #2\n--- a\/k\.py/);
  const tracker = new SearchTracker();
  tracker.onCandidate(note);
  let asked = 0;
  const { commands } = commandsWith({ execute: async () => asked++ }, tracker);
  const shown = await commands.showCandidates();
  assert.equal(shown?.candidateId, 5);
  assert.equal(asked, 0, "a rejected candidate needs no server round trip");
  const [open] = stub.called("languages.setTextDocumentLanguage");
  assert.equal(open.args[1], "diff");
  const doc = open.args[0] as { getText(): string };
  assert.equal(doc.getText(), text);
});

test("the Python extension's interpreter is used and a new choice there restarts the server", async () => {
  workspace();
  let changed: (() => void) | undefined;
  stub.extensions.set("ms-python.python", {
    isActive: true,
    exports: {
      environments: {
        getActiveEnvironmentPath: () => ({ path: "/envs/ke" }),
        resolveEnvironment: async () => ({ executable: { uri: { fsPath: "/envs/ke/bin/python" } } }),
        onDidChangeActiveEnvironmentPath: (listener: () => void) => {
          changed = listener;
          return { dispose: () => (changed = undefined) };
        },
      },
    },
  });
  const made: FakeClient[] = [];
  const ext = new KernelEvolveExtension(recordingFactory(made));
  await ext.start();
  assert.deepEqual(made[0].parts.interpreter, { command: ["/envs/ke/bin/python"], source: "python-extension" });
  assert.ok(changed, "the extension follows the Python extension's choice");
  changed();
  await new Promise((r) => setTimeout(r, RESTART_DELAY_MS + 300));
  assert.equal(made.length, 2);
  ext.dispose();
  assert.equal(changed, undefined, "dispose stops following");
});
