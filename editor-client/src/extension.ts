// Entry point: output channel, status bar, diff documents, commands, and the language client.

import * as fs from "fs";
import * as vscode from "vscode";
import { CLIENT_COMMANDS, Commands, ServerLink } from "./commands";
import { SCHEME, VirtualDocuments } from "./diffView";
import { findInterpreter, interpreterFromPythonApi, PythonExtensionApi, settingCommand } from "./interpreter";
import { SearchTracker } from "./searches";
import { needsRestart, SECTION, serverSettings } from "./settings";
import { SearchStatusBar } from "./statusBar";
import type { ClientParts } from "./client";

export const RESTART_DELAY_MS = 1000;

/** What the extension needs from a language client (the real one is vscode-languageclient's). */
export interface ClientLike {
  start(): Promise<void>;
  stop(): Promise<void>;
  isRunning(): boolean;
}

export type ClientFactory = (parts: ClientParts) => { client: ClientLike; link: ServerLink };

function realFactory(parts: ClientParts): { client: ClientLike; link: ServerLink } {
  // Loaded lazily so the pure parts of the extension load without the client library.
  const { createClient, linkTo } = require("./client") as typeof import("./client");
  const client = createClient(parts);
  return { client, link: linkTo(client) };
}

function fileExists(fileUri: string): boolean {
  try {
    return fs.statSync(vscode.Uri.parse(fileUri).fsPath).isFile();
  } catch {
    return false;
  }
}

async function pythonExtensionApi(): Promise<PythonExtensionApi | undefined> {
  const ext = vscode.extensions.getExtension<PythonExtensionApi>("ms-python.python");
  if (!ext) return undefined;
  return ext.isActive ? ext.exports : await ext.activate();
}

export class KernelEvolveExtension implements vscode.Disposable {
  readonly output: vscode.OutputChannel;
  readonly tracker = new SearchTracker();
  readonly docs = new VirtualDocuments();
  readonly commands: Commands;
  readonly statusBar: SearchStatusBar;
  private client: ClientLike | undefined;
  private link: ServerLink | undefined;
  private restartTimer: ReturnType<typeof setTimeout> | undefined;
  private followingPython = false;
  private readonly disposables: vscode.Disposable[] = [];

  constructor(private readonly makeClient: ClientFactory = realFactory) {
    this.output = vscode.window.createOutputChannel("kernelevolve");
    this.commands = new Commands(
      () => (this.client?.isRunning() ? this.link : undefined),
      this.tracker,
      this.docs,
      this.output,
      fileExists,
    );
    this.statusBar = new SearchStatusBar(this.tracker);
    const c = this.commands;
    this.disposables.push(
      this.output,
      this.docs,
      this.statusBar,
      vscode.workspace.registerTextDocumentContentProvider(SCHEME, this.docs),
      vscode.commands.registerCommand(CLIENT_COMMANDS.evolve, () => c.evolveKernel()),
      vscode.commands.registerCommand(CLIENT_COMMANDS.cancel, () => c.cancelSearch()),
      vscode.commands.registerCommand(CLIENT_COMMANDS.applyBest, () => c.applyBestKernel()),
      vscode.commands.registerCommand(CLIENT_COMMANDS.showHistory, () => c.showHistory()),
      vscode.commands.registerCommand(CLIENT_COMMANDS.showBestDiff, () => c.showBestDiff()),
      vscode.commands.registerCommand(CLIENT_COMMANDS.showCandidates, (jobId?: string) => c.showCandidates(jobId)),
      vscode.commands.registerCommand(CLIENT_COMMANDS.showOutput, () => this.output.show(true)),
      vscode.commands.registerCommand(CLIENT_COMMANDS.restart, () => this.restart()),
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (needsRestart((key) => e.affectsConfiguration(key))) this.scheduleRestart();
      }),
    );
  }

  async start(): Promise<boolean> {
    const config = vscode.workspace.getConfiguration(SECTION);
    const folders = (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath);
    const interpreter = await findInterpreter({
      setting: config.get("interpreter"),
      pythonExtension: async () => {
        const api = await pythonExtensionApi();
        this.followPythonExtension(api);
        return interpreterFromPythonApi(api, folders[0] ? vscode.Uri.file(folders[0]) : undefined);
      },
      workspaceFolders: folders,
      isFile: (p) => fs.existsSync(p) && fs.statSync(p).isFile(),
      platform: process.platform,
    });
    const serverArgs = (config.get<string[]>("serverArgs") ?? []).filter((a) => typeof a === "string");
    this.output.appendLine(`Starting kernelevolve serve with ${interpreter.command.join(" ")} (from ${interpreter.source})`);
    const made = this.makeClient({
      interpreter,
      serverArgs,
      settings: serverSettings(config),
      cwd: folders[0],
      output: this.output,
      commands: this.commands,
    });
    this.client = made.client;
    this.link = made.link;
    try {
      await made.client.start();
      return true;
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      this.output.appendLine(`The server did not start: ${message}`);
      void vscode.window
        .showErrorMessage(
          `kernelevolve: the language server did not start with ${interpreter.command.join(" ")} (${message}). ` +
            "Install kernelevolve into that Python (pip install -e .) or set kernelEvolve.interpreter.",
          "Show output",
        )
        .then((choice) => (choice ? this.output.show(true) : undefined));
      return false;
    }
  }

  /** A new interpreter picked in the Python extension restarts the server (when we use its choice). */
  private followPythonExtension(api: PythonExtensionApi | undefined): void {
    const subscribe = api?.environments?.onDidChangeActiveEnvironmentPath;
    if (this.followingPython || !subscribe) return;
    this.followingPython = true;
    this.disposables.push(
      subscribe.call(api.environments, () => {
        if (settingCommand(vscode.workspace.getConfiguration(SECTION).get("interpreter")) === undefined) {
          this.scheduleRestart();
        }
      }),
    );
  }

  async restart(): Promise<boolean> {
    await this.stop();
    return this.start();
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    this.link = undefined;
    if (client) {
      try {
        await client.stop();
      } catch (err) {
        this.output.appendLine(`Stopping the server: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
    this.tracker.serverStopped();
  }

  scheduleRestart(): void {
    if (this.restartTimer) clearTimeout(this.restartTimer);
    this.restartTimer = setTimeout(() => {
      this.restartTimer = undefined;
      void this.restart();
    }, RESTART_DELAY_MS);
  }

  dispose(): void {
    if (this.restartTimer) clearTimeout(this.restartTimer);
    for (const d of this.disposables) d.dispose();
  }
}

let current: KernelEvolveExtension | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<KernelEvolveExtension> {
  current = new KernelEvolveExtension();
  context.subscriptions.push(current);
  await current.start();
  return current;
}

export async function deactivate(): Promise<void> {
  const ext = current;
  current = undefined;
  await ext?.stop();
}
