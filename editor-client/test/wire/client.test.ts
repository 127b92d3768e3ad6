// The extension as VS Code runs it: the shipped bundle (dist/extension.js) activated, its real
// vscode-languageclient (src/client.ts, with its middleware) launching the real
// `kernelevolve serve` from the configured interpreter, under the stand-in `vscode` module. Evolve through the server command a code action runs,
// follow it in the status bar, cancel it with the extension's command, change a setting, stop.

import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { pathToFileURL } from "node:url";
import { after, test } from "node:test";
import * as vscode from "vscode";
import { CLIENT_COMMANDS } from "../../src/commands";
import type { KernelEvolveExtension } from "../../src/extension";
import { EvolveResult, SERVER_COMMANDS } from "../../src/protocol";
import { stub, textDocument } from "../stub/vscode";
import { EDITOR_CLIENT, PYTHON, REPO } from "./session";

type Bundle = { activate(context: unknown): Promise<KernelEvolveExtension>; deactivate(): Promise<void> };

let ext: KernelEvolveExtension | undefined;

const context = { subscriptions: [] as { dispose(): void }[] };
const bundle = require(path.join(EDITOR_CLIENT, "dist", "extension.js")) as Bundle;

after(async () => {
  await bundle.deactivate();
  for (const d of context.subscriptions) d.dispose();
});

async function until(what: string, predicate: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}:\n${stub.outputLines.join("\n").slice(-3000)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function messages(api: string): string[] {
  return stub.called(api).map((c) => String(c.args[0]));
}

test("the shipped extension starts the server, offers and runs Evolve, follows and cancels it, pulls settings, stops", async () => {
  stub.reset();
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "ke-client-"));
  fs.copyFileSync(path.join(REPO, "examples", "fused_elementwise", "problem.py"), path.join(root, "problem.py"));
  fs.copyFileSync(path.join(REPO, "examples", "fused_elementwise", "candidate.py"), path.join(root, "seed_kernel.py"));
  const text = fs.readFileSync(path.join(root, "problem.py"), "utf8");
  const uri = pathToFileURL(path.join(root, "problem.py")).toString();
  const modelLine = text.split("\n").findIndex((l) => l.startsWith("class Model"));
  stub.workspaceFolders = [{ uri: vscode.Uri.file(root), name: "w", index: 0 }];
  stub.config = {
    "kernelEvolve.interpreter": [PYTHON],
    "kernelEvolve.serverArgs": [],
    "kernelEvolve.trace.server": "off",
    "kernelEvolve.maxSteps": 4,
    "kernelEvolve.draftSize": 1,
    "kernelEvolve.parallel": 1,
  };
  (vscode.workspace as unknown as { textDocuments: unknown[] }).textDocuments = [textDocument(uri, text)];
  process.env.TRITON_INTERPRET = "1"; // inherited by the server the client spawns

  ext = await bundle.activate(context);
  assert.ok(ext.tracker, "activate returns the extension");
  assert.ok(!stub.outputLines.some((l) => l.startsWith("The server did not start")), stub.outputLines.join("\n"));
  assert.match(stub.outputLines[0], /^Starting kernelevolve serve with .*python.* \(from setting\)$/);
  // The client library registered the server's commands, as it does in VS Code.
  await until("server commands", () => stub.commands.has(SERVER_COMMANDS.evolve), 30_000);
  for (const id of Object.values(SERVER_COMMANDS)) assert.ok(stub.commands.has(id), id);
  assert.ok(stub.languageProviders.has("codeAction") && stub.languageProviders.has("hover"));

  // The light bulb on the op: the client library asks the server and converts its answer.
  const provider = stub.languageProviders.get("codeAction") as {
    provideCodeActions(doc: unknown, range: unknown, context: unknown, token: unknown): Promise<vscode.CodeAction[]>;
  };
  const at = { line: modelLine, character: 0 };
  const actions = await provider.provideCodeActions(
    vscode.workspace.textDocuments[0],
    { start: at, end: at },
    { diagnostics: [], only: undefined, triggerKind: vscode.CodeActionTriggerKind.Invoke },
    new vscode.CancellationTokenSource().token,
  );
  const [evolve] = actions;
  assert.equal(evolve.title, "Evolve kernel: Model");
  assert.equal(evolve.kind?.value, "refactor.rewrite");
  assert.equal(evolve.command?.command, SERVER_COMMANDS.evolve);
  // Clicking it runs its command (here with the bundled seed kernel); the middleware sees the answer.
  const clickArgs = { ...(evolve.command!.arguments![0] as object), seedPath: "seed_kernel.py" };
  const started = (await vscode.commands.executeCommand(evolve.command!.command, clickArgs)) as EvolveResult;
  assert.equal(started.op, "Model");
  const item = stub.statusItems[0];
  assert.ok(item.visible);
  assert.match(item.text, /^\$\(sync~spin\) Model: 0 evaluated · searching$/);
  assert.equal(item.command, CLIENT_COMMANDS.showCandidates);
  // The server's work-done progress became a cancellable VS Code progress notification.
  await until("the progress notification", () => stub.progress.length > 0, 30_000);
  assert.equal(stub.progress[0].options.title, "Evolving Model");
  assert.equal(stub.progress[0].options.cancellable, true);

  const cancelled = await vscode.commands.executeCommand(CLIENT_COMMANDS.cancel);
  assert.deepEqual(cancelled, [started.jobId]);
  await until("the cancelled run", () => ext!.tracker.running().length === 0, 120_000);
  assert.equal(ext.tracker.get(started.jobId)?.status, "cancelled");
  assert.match(item.text, /^\$\(circle-slash\) Model: /);
  assert.ok(stub.outputLines.some((l) => l.startsWith("[Model] cancelled:")), stub.outputLines.join("\n"));
  await until("the progress to end", () => stub.progress[0].done, 10_000);

  // A settings change reaches the server through workspace/configuration and the extension's
  // filter: the bad value is reported by name, the client-only keys are not "unknown".
  stub.config["kernelEvolve.patience"] = 0;
  stub.changeConfiguration(["kernelEvolve.patience"]);
  await until("the settings warning", () => messages("window.showWarningMessage").some((m) => m.includes("kernelEvolve.patience")), 30_000);
  const warnings = messages("window.showWarningMessage");
  assert.ok(!warnings.some((m) => m.includes("unknown setting")), warnings.join("\n"));
  assert.equal(messages("window.showErrorMessage").length, 0, messages("window.showErrorMessage").join("\n"));

  await bundle.deactivate();
  await until("the server's exit", () => stub.outputLines.some((l) => /Server process exited with code 0/.test(l)), 15_000);
});
