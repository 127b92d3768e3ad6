import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { test } from "node:test";
import {
  findInterpreter,
  InterpreterLookup,
  interpreterFromPythonApi,
  serverLaunch,
  settingCommand,
} from "../../src/interpreter";

function lookup(overrides: Partial<InterpreterLookup>): InterpreterLookup {
  return {
    setting: undefined,
    pythonExtension: async () => undefined,
    workspaceFolders: [],
    isFile: (p) => fs.existsSync(p) && fs.statSync(p).isFile(),
    platform: "linux",
    ...overrides,
  };
}

function workspaceWithVenv(): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "ke-interp-"));
  fs.mkdirSync(path.join(root, ".venv", "bin"), { recursive: true });
  fs.writeFileSync(path.join(root, ".venv", "bin", "python"), "");
  return root;
}

test("the interpreter setting wins over the Python extension and the workspace venv", async () => {
  const root = workspaceWithVenv();
  const found = await findInterpreter(
    lookup({
      setting: ["conda", "run", "-n", "ke", "python"],
      pythonExtension: async () => ["/from/extension/python"],
      workspaceFolders: [root],
    }),
  );
  assert.deepEqual(found, { command: ["conda", "run", "-n", "ke", "python"], source: "setting" });
});

test("${workspaceFolder} in the setting is the first workspace folder", async () => {
  const found = await findInterpreter(
    lookup({ setting: ["${workspaceFolder}/.venv/bin/python"], workspaceFolders: ["/w/one", "/w/two"] }),
  );
  assert.deepEqual(found.command, ["/w/one/.venv/bin/python"]);
});

test("a blank or malformed setting counts as unset", () => {
  assert.equal(settingCommand(""), undefined);
  assert.equal(settingCommand([]), undefined);
  assert.equal(settingCommand(["  "]), undefined);
  assert.equal(settingCommand([1, 2]), undefined);
  assert.deepEqual(settingCommand(" /usr/bin/python3 "), ["/usr/bin/python3"]);
});

test("the Python extension's interpreter comes before the workspace venv", async () => {
  const root = workspaceWithVenv();
  const found = await findInterpreter(
    lookup({ pythonExtension: async () => ["/envs/ke/bin/python"], workspaceFolders: [root] }),
  );
  assert.deepEqual(found, { command: ["/envs/ke/bin/python"], source: "python-extension" });
});

test("a Python extension that throws is skipped, and the workspace venv is used", async () => {
  const root = workspaceWithVenv();
  const found = await findInterpreter(
    lookup({
      pythonExtension: async () => {
        throw new Error("extension host busy");
      },
      workspaceFolders: ["/does/not/exist", root],
    }),
  );
  assert.deepEqual(found, { command: [path.join(root, ".venv", "bin", "python")], source: "workspace-venv" });
});

test("without setting, extension or venv it falls back to python3 (python on Windows)", async () => {
  const empty = fs.mkdtempSync(path.join(os.tmpdir(), "ke-interp-"));
  assert.deepEqual(await findInterpreter(lookup({ workspaceFolders: [empty] })), {
    command: ["python3"],
    source: "path",
  });
  assert.deepEqual((await findInterpreter(lookup({ platform: "win32" }))).command, ["python"]);
});

test("the new Python environments API resolves the active environment's executable", async () => {
  const api = {
    environments: {
      getActiveEnvironmentPath: () => ({ path: "/envs/ke" }),
      resolveEnvironment: async (env: unknown) => {
        assert.deepEqual(env, { path: "/envs/ke" });
        return { executable: { uri: { fsPath: "/envs/ke/bin/python" } } };
      },
    },
  };
  assert.deepEqual(await interpreterFromPythonApi(api, undefined), ["/envs/ke/bin/python"]);
});

test("the legacy Python API's execCommand is used when the environment has no executable", async () => {
  const api = {
    environments: {
      getActiveEnvironmentPath: () => ({ path: "/envs/x" }),
      resolveEnvironment: async () => ({ executable: {} }),
    },
    settings: { getExecutionDetails: () => ({ execCommand: ["/usr/bin/python3.12"] }) },
  };
  assert.deepEqual(await interpreterFromPythonApi(api, undefined), ["/usr/bin/python3.12"]);
  assert.equal(await interpreterFromPythonApi(undefined, undefined), undefined);
});

test("the server is launched as python -m kernelevolve.server.cli serve with extra arguments last", () => {
  const launch = serverLaunch({ command: ["conda", "run", "python"], source: "setting" }, ["--log-file", "x.log"]);
  assert.deepEqual(launch, {
    command: "conda",
    args: ["run", "python", "-m", "kernelevolve.server.cli", "serve", "--log-file", "x.log"],
  });
});
