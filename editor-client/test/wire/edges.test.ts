// The real server's answers to what goes wrong, seen through the extension's code: malformed
// arguments, an unknown command, an op without inputs, a bad setting, a cancelled search; and
// the extension's contributed settings checked against the server's own schema.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { after, before, test } from "node:test";
import * as vscode from "vscode";
import { Commands, ServerLink } from "../../src/commands";
import { VirtualDocuments } from "../../src/diffView";
import { wireNotifications } from "../../src/notifications";
import { EvolveResult, RunFinishedNote, SERVER_COMMANDS } from "../../src/protocol";
import { SearchTracker, statusView } from "../../src/searches";
import { SERVER_SETTING_KEYS } from "../../src/settings";
import { pythonEditor, stub } from "../stub/vscode";
import { EDITOR_CLIENT, PYTHON, REPO, Session, startSession } from "./session";

const NO_INPUTS = `import torch
import torch.nn as nn


class Scale(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 2.0
`;

let session: Session;
let root: string;
const tracker = new SearchTracker();
let commands: Commands;

before(async () => {
  stub.reset();
  root = fs.mkdtempSync(path.join(os.tmpdir(), "ke-edges-"));
  fs.writeFileSync(path.join(root, "scale.py"), NO_INPUTS);
  fs.copyFileSync(path.join(REPO, "examples", "fused_elementwise", "problem.py"), path.join(root, "problem.py"));
  const section = { maxSteps: 0, draftSize: 1, patience: 2, interpreter: ["/ignored"] };
  session = await startSession(root, { settings: { maxSteps: 0, draftSize: 1, patience: 2 } }, section);
  const log = { appendLine: (l: string) => stub.outputLines.push(l) };
  wireNotifications((method, handler) => session.on(method, handler), tracker, log);
  const link: ServerLink = {
    execute: (command, arg) => session.conn.sendRequest("workspace/executeCommand", { command, arguments: arg ? [arg] : [] }),
  };
  commands = new Commands(() => link, tracker, new VirtualDocuments(), log, () => false);
});

after(async () => {
  if (session && session.proc.exitCode === null) session.proc.kill("SIGKILL");
});

async function errorOf(promise: Promise<unknown>): Promise<{ code: number; message: string }> {
  try {
    await promise;
  } catch (err) {
    return err as { code: number; message: string };
  }
  throw new Error("expected the request to fail");
}

test("a bad setting value is shown naming the key, and the default is kept", async () => {
  await session.waitFor("the settings message", () => session.notes("window/showMessage").length > 0, 30_000);
  const messages = session.notes("window/showMessage").map((m) => m.message as string);
  assert.ok(messages.some((m) => m.includes("kernelEvolve.maxSteps") && m.includes(">= 1")), messages.join("\n"));
  assert.ok(!messages.some((m) => m.includes("unknown setting")), messages.join("\n"));
});

test("malformed command arguments get InvalidParams, an unknown command an error", async () => {
  const bad = await errorOf(
    session.conn.sendRequest("workspace/executeCommand", { command: SERVER_COMMANDS.evolve, arguments: ["file:///x.py"] }),
  );
  assert.equal(bad.code, -32602);
  assert.match(bad.message, /takes one JSON object argument/);
  const unknown = await errorOf(session.conn.sendRequest("workspace/executeCommand", { command: "kernelEvolve.nope", arguments: [] }));
  assert.ok(unknown.code < 0 && /nope/.test(unknown.message), JSON.stringify(unknown));
});

test("an op without inputs: the code action is disabled with the reason, and Evolve shows it", async () => {
  const uri = session.open("scale.py");
  const actions = (await session.conn.sendRequest("textDocument/codeAction", {
    textDocument: { uri },
    range: { start: { line: 6, character: 8 }, end: { line: 6, character: 8 } },
    context: { diagnostics: [] },
  })) as { title: string; disabled?: { reason: string } }[];
  assert.equal(actions.length, 1);
  assert.match(actions[0].disabled?.reason ?? "", /inputs/);

  vscode.window.activeTextEditor = pythonEditor(uri, 6) as unknown as vscode.TextEditor;
  assert.equal(await commands.evolveKernel(), undefined);
  const [shown] = stub.called("window.showErrorMessage");
  assert.ok(String(shown.args[0]).startsWith("kernelevolve: "), String(shown.args[0]));
  assert.ok(String(shown.args[0]).includes(actions[0].disabled!.reason), "the server's reason, word for word");
  assert.equal(tracker.all().length, 0);
});

test("Cancel stops a running search; the status bar then shows it cancelled", async () => {
  const uri = session.open("problem.py");
  vscode.window.activeTextEditor = pythonEditor(uri, 14) as unknown as vscode.TextEditor;
  const started = (await commands.evolveKernel()) as EvolveResult;
  assert.ok(started?.jobId);
  assert.deepEqual(await commands.cancelSearch(), [started.jobId]);
  await session.waitFor("runFinished", () => session.notes("kernelEvolve/runFinished").length > 0, 120_000);
  const [finished] = session.notes("kernelEvolve/runFinished") as RunFinishedNote[];
  assert.equal(finished.jobId, started.jobId);
  assert.equal(finished.status, "cancelled");
  assert.match(statusView(tracker).text, /^\$\(circle-slash\) Model: /);
  // The bad maxSteps (0) from the first test kept the server's default of 8.
  const begin = session.notes("$/progress").find((p) => p.token === started.token && p.value.kind === "begin");
  assert.match(begin?.value.message ?? "", /up to 8 steps/);
  assert.equal(await session.close(), 0);
});

test("package.json contributes the server's settings with the server's defaults", () => {
  const script = [
    "import dataclasses, json",
    "from kernelevolve.server.lsp.settings import Settings, camel",
    "print(json.dumps({camel(f.name): f.default for f in dataclasses.fields(Settings)}))",
  ].join("\n");
  const server = JSON.parse(execFileSync(PYTHON, ["-c", script], { encoding: "utf8" })) as Record<string, unknown>;
  assert.deepEqual(new Set(Object.keys(server)), new Set(SERVER_SETTING_KEYS));
  const manifest = JSON.parse(fs.readFileSync(path.join(EDITOR_CLIENT, "package.json"), "utf8"));
  const props = manifest.contributes.configuration.properties as Record<string, { default: unknown }>;
  for (const [key, value] of Object.entries(server)) {
    assert.deepEqual(props[`kernelEvolve.${key}`]?.default, value, `kernelEvolve.${key}`);
  }
});
