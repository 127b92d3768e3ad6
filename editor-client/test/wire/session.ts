// A bare JSON-RPC client with VS Code's capabilities, driving the REAL `kernelevolve serve`.
// It answers the server's requests the way VS Code does (configuration through the extension's
// own filter, progress create, inlay-hint refresh, applyEdit written to disk) and records
// everything that arrives.

import { ChildProcess, spawn } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import {
  createMessageConnection,
  MessageConnection,
  StreamMessageReader,
  StreamMessageWriter,
} from "vscode-jsonrpc/node";
import type { ClientCapabilities, InitializeResult } from "vscode-languageserver-protocol";
import { filterConfigurationAnswer } from "../../src/settings";

export const EDITOR_CLIENT = path.resolve(__dirname, "..", "..", "..");
export const REPO = path.resolve(EDITOR_CLIENT, "..");
export const PYTHON = process.env.KERNELEVOLVE_PYTHON ?? path.join(REPO, ".venv", "bin", "python");

/** What VS Code 1.9x advertises for the parts this server uses. */
export const VSCODE_CAPABILITIES: ClientCapabilities = {
  workspace: {
    applyEdit: true,
    configuration: true,
    workspaceFolders: true,
    didChangeConfiguration: { dynamicRegistration: true },
    executeCommand: { dynamicRegistration: true },
    workspaceEdit: {
      documentChanges: true,
      resourceOperations: ["create", "rename", "delete"],
      failureHandling: "textOnlyTransactional",
    },
    inlayHint: { refreshSupport: true },
  },
  textDocument: {
    synchronization: { dynamicRegistration: true, didSave: true, willSave: true, willSaveWaitUntil: true },
    hover: { dynamicRegistration: true, contentFormat: ["markdown", "plaintext"] },
    codeAction: {
      dynamicRegistration: true,
      isPreferredSupport: true,
      disabledSupport: true,
      dataSupport: true,
      resolveSupport: { properties: ["edit"] },
      codeActionLiteralSupport: {
        codeActionKind: {
          valueSet: ["", "quickfix", "refactor", "refactor.extract", "refactor.inline", "refactor.rewrite", "source"],
        },
      },
    },
    inlayHint: { dynamicRegistration: true, resolveSupport: { properties: ["tooltip", "label.tooltip"] } },
    publishDiagnostics: { relatedInformation: true, versionSupport: false },
  },
  window: { workDoneProgress: true, showMessage: {}, showDocument: { support: true } },
  general: { positionEncodings: ["utf-16"] },
};

export interface Seen {
  notifications: { method: string; params: any }[]; // `any`: payloads are asserted field by field
  requests: { method: string; params: any }[];
  stderr: string[];
}

export interface Session {
  proc: ChildProcess;
  conn: MessageConnection;
  seen: Seen;
  init: InitializeResult;
  root: string;
  uriOf(file: string): string;
  open(file: string): string;
  notes(method: string): any[];
  /** Also hand `method`'s notifications to `handler` (a method-specific conn.onNotification would hide them from `seen`). */
  on(method: string, handler: (params: any) => void): void;
  waitFor(what: string, predicate: () => boolean, timeoutMs: number): Promise<void>;
  close(): Promise<number | null>;
}

/** The `kernelEvolve` section as VS Code would answer it: the user's settings plus the client's own keys. */
export type SectionAnswer = Record<string, unknown>;

export async function startSession(
  root: string,
  initializationOptions: unknown,
  section: SectionAnswer,
): Promise<Session> {
  const listeners: { method: string; handler: (params: any) => void }[] = [];
  const proc = spawn(PYTHON, ["-m", "kernelevolve.server.cli", "serve"], {
    cwd: root,
    env: { ...process.env, TRITON_INTERPRET: "1", PYTHONUNBUFFERED: "1" },
    stdio: ["pipe", "pipe", "pipe"],
  });
  const seen: Seen = { notifications: [], requests: [], stderr: [] };
  proc.stderr!.on("data", (chunk: Buffer) => seen.stderr.push(chunk.toString()));
  const conn = createMessageConnection(new StreamMessageReader(proc.stdout!), new StreamMessageWriter(proc.stdin!));
  conn.onNotification((method: string, params: unknown) => {
    seen.notifications.push({ method, params });
    for (const l of listeners) if (l.method === method) l.handler(params);
  });
  // vscode-jsonrpc routes `$/progress` to per-token handlers; VS Code's own would show it.
  conn.onUnhandledProgress((params) => seen.notifications.push({ method: "$/progress", params }));
  const answer = (method: string, fn: (params: any) => unknown) =>
    conn.onRequest(method, (params: unknown) => {
      seen.requests.push({ method, params });
      return fn(params);
    });
  answer("workspace/configuration", (params: { items: { section?: string }[] }) =>
    filterConfigurationAnswer(
      params.items,
      params.items.map((item) => (item.section === "kernelEvolve" ? section : null)),
    ),
  );
  answer("window/workDoneProgress/create", () => null);
  answer("workspace/inlayHint/refresh", () => null);
  answer("client/registerCapability", () => null);
  answer("window/showDocument", () => ({ success: true }));
  answer("workspace/applyEdit", (params: { edit: WorkspaceEditLike }) => applyToDisk(params.edit));
  conn.listen();

  const uriOf = (file: string) => pathToFileURL(path.join(root, file)).toString();
  const init = (await conn.sendRequest("initialize", {
    processId: process.pid,
    clientInfo: { name: "Visual Studio Code", version: "1.95.0" },
    rootUri: pathToFileURL(root).toString(),
    workspaceFolders: [{ uri: pathToFileURL(root).toString(), name: path.basename(root) }],
    capabilities: VSCODE_CAPABILITIES,
    initializationOptions,
  })) as InitializeResult;
  await conn.sendNotification("initialized", {});

  const session: Session = {
    proc,
    conn,
    seen,
    init,
    root,
    uriOf,
    open(file: string): string {
      const uri = uriOf(file);
      void conn.sendNotification("textDocument/didOpen", {
        textDocument: { uri, languageId: "python", version: 1, text: fs.readFileSync(path.join(root, file), "utf8") },
      });
      return uri;
    },
    on: (method, handler) => listeners.push({ method, handler }),
    notes: (method: string) => seen.notifications.filter((n) => n.method === method).map((n) => n.params),
    async waitFor(what, predicate, timeoutMs) {
      const deadline = Date.now() + timeoutMs;
      while (!predicate()) {
        if (proc.exitCode !== null) throw new Error(`server exited (${proc.exitCode}) while waiting for ${what}: ${seen.stderr.join("").slice(-2000)}`);
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; stderr: ${seen.stderr.join("").slice(-2000)}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    async close(): Promise<number | null> {
      const exited = new Promise<number | null>((resolve) => {
        if (proc.exitCode !== null) resolve(proc.exitCode);
        else proc.once("exit", (code) => resolve(code));
      });
      await conn.sendRequest("shutdown");
      await conn.sendNotification("exit");
      const timer = setTimeout(() => proc.kill("SIGKILL"), 20_000);
      const code = await exited;
      clearTimeout(timer);
      conn.dispose();
      return code;
    },
  };
  return session;
}

interface Pos {
  line: number;
  character: number;
}
interface TextEditLike {
  range: { start: Pos; end: Pos };
  newText: string;
}
interface WorkspaceEditLike {
  changes?: Record<string, TextEditLike[]>;
  documentChanges?: (
    | { kind: "create"; uri: string; options?: { overwrite?: boolean; ignoreIfExists?: boolean } }
    | { textDocument: { uri: string }; edits: TextEditLike[] }
  )[];
}

function offsetOf(text: string, pos: Pos): number {
  const lines = text.split("\n");
  let offset = 0;
  for (let i = 0; i < pos.line && i < lines.length; i++) offset += lines[i].length + 1;
  return Math.min(text.length, offset + pos.character);
}

function applyEdits(file: string, edits: TextEditLike[]): void {
  let text = fs.existsSync(file) ? fs.readFileSync(file, "utf8") : "";
  const sorted = [...edits].sort((a, b) => offsetOf(text, b.range.start) - offsetOf(text, a.range.start));
  for (const e of sorted) {
    text = text.slice(0, offsetOf(text, e.range.start)) + e.newText + text.slice(offsetOf(text, e.range.end));
  }
  fs.writeFileSync(file, text);
}

/** What VS Code does with `workspace/applyEdit`, done to the files on disk. */
function applyToDisk(edit: WorkspaceEditLike): { applied: boolean; failureReason?: string } {
  try {
    for (const change of edit.documentChanges ?? []) {
      if ("kind" in change) {
        const file = fileURLToPath(change.uri);
        if (change.kind === "create" && (!fs.existsSync(file) || change.options?.overwrite)) fs.writeFileSync(file, "");
      } else {
        applyEdits(fileURLToPath(change.textDocument.uri), change.edits);
      }
    }
    for (const [uri, edits] of Object.entries(edit.changes ?? {})) applyEdits(fileURLToPath(uri), edits);
    return { applied: true };
  } catch (err) {
    return { applied: false, failureReason: String(err) };
  }
}
