// Finding the Python that runs `kernelevolve serve`, in the brief's order: the
// `kernelEvolve.interpreter` setting, the Python extension's active environment, the workspace's
// `.venv`, then `python3` on PATH.

import * as path from "path";

export type InterpreterSource = "setting" | "python-extension" | "workspace-venv" | "path";

export interface Interpreter {
  /** The executable and any arguments before ours (e.g. `["conda", "run", "-n", "x", "python"]`). */
  command: string[];
  source: InterpreterSource;
}

/** What the lookup may consult; the extension passes the real things, tests pass their own. */
export interface InterpreterLookup {
  setting: unknown;
  /** The Python extension's interpreter for the workspace, when that extension is installed. */
  pythonExtension: () => Promise<string[] | undefined>;
  workspaceFolders: string[];
  isFile: (file: string) => boolean;
  platform: NodeJS.Platform;
}

export const SERVER_MODULE = "kernelevolve.server.cli";

/**
 * The setting as a command list: a string, or a list of strings; blanks mean "not set".
 * `${workspaceFolder}` becomes the first workspace folder, as in VS Code's own settings.
 */
export function settingCommand(setting: unknown, workspaceFolder?: string): string[] | undefined {
  const expand = (s: string) => (workspaceFolder ? s.split("${workspaceFolder}").join(workspaceFolder) : s);
  if (typeof setting === "string") {
    return setting.trim() ? [expand(setting.trim())] : undefined;
  }
  if (Array.isArray(setting) && setting.length > 0 && setting.every((s) => typeof s === "string")) {
    const parts = (setting as string[]).map((s) => s.trim()).filter((s) => s.length > 0);
    return parts.length > 0 ? parts.map(expand) : undefined;
  }
  return undefined;
}

export function venvPython(folder: string, platform: NodeJS.Platform): string {
  return platform === "win32"
    ? path.win32.join(folder, ".venv", "Scripts", "python.exe")
    : path.posix.join(folder, ".venv", "bin", "python");
}

export async function findInterpreter(lookup: InterpreterLookup): Promise<Interpreter> {
  const fromSetting = settingCommand(lookup.setting, lookup.workspaceFolders[0]);
  if (fromSetting) {
    return { command: fromSetting, source: "setting" };
  }
  let fromExtension: string[] | undefined;
  try {
    fromExtension = await lookup.pythonExtension();
  } catch {
    fromExtension = undefined; // an extension that fails to answer is as good as none
  }
  if (fromExtension && fromExtension.length > 0 && fromExtension[0]) {
    return { command: fromExtension, source: "python-extension" };
  }
  for (const folder of lookup.workspaceFolders) {
    const candidate = venvPython(folder, lookup.platform);
    if (lookup.isFile(candidate)) {
      return { command: [candidate], source: "workspace-venv" };
    }
  }
  return { command: [lookup.platform === "win32" ? "python" : "python3"], source: "path" };
}

/** `python -m kernelevolve.server.cli serve [extra...]` as command + args. */
export function serverLaunch(interpreter: Interpreter, extraArgs: string[] = []): { command: string; args: string[] } {
  const [command, ...rest] = interpreter.command;
  return { command, args: [...rest, "-m", SERVER_MODULE, "serve", ...extraArgs] };
}

/** Minimal shapes of the ms-python.python extension API (new `environments` and legacy `settings`). */
export interface PythonExtensionApi {
  environments?: {
    onDidChangeActiveEnvironmentPath?: (listener: () => void) => { dispose(): void };
    getActiveEnvironmentPath(resource?: unknown): { path: string } | undefined;
    resolveEnvironment(env: unknown): Promise<{ executable: { uri?: { fsPath: string } } } | undefined>;
  };
  settings?: {
    getExecutionDetails(resource?: unknown): { execCommand: string[] | undefined };
  };
}

/** The interpreter the Python extension has selected for `resource`, if it says. */
export async function interpreterFromPythonApi(
  api: PythonExtensionApi | undefined,
  resource: unknown,
): Promise<string[] | undefined> {
  if (!api) {
    return undefined;
  }
  if (api.environments) {
    const active = api.environments.getActiveEnvironmentPath(resource);
    if (active) {
      const env = await api.environments.resolveEnvironment(active);
      const exe = env?.executable.uri?.fsPath;
      if (exe) {
        return [exe];
      }
    }
  }
  const details = api.settings?.getExecutionDetails(resource);
  return details?.execCommand && details.execCommand.length > 0 ? details.execCommand : undefined;
}
