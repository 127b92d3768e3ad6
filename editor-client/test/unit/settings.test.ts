import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { test } from "node:test";
import { CLIENT_COMMANDS } from "../../src/commands";
import {
  CLIENT_SETTING_KEYS,
  filterConfigurationAnswer,
  needsRestart,
  SERVER_SETTING_KEYS,
  serverSettings,
} from "../../src/settings";

const manifest = JSON.parse(fs.readFileSync(path.join(__dirname, "..", "..", "..", "package.json"), "utf8"));
const properties: Record<string, { default: unknown }> = manifest.contributes.configuration.properties;

test("serverSettings sends only the server's keys, defaults included", () => {
  const values: Record<string, unknown> = { maxSteps: 3, strategy: "beam", interpreter: ["/x/python"], trace: { server: "off" } };
  const settings = serverSettings({ get: <T>(key: string) => values[key] as T | undefined });
  assert.deepEqual(settings, { maxSteps: 3, strategy: "beam" });
});

test("the configuration answer loses the client's keys only in the kernelEvolve section", () => {
  const answer = filterConfigurationAnswer(
    [{ section: "kernelEvolve" }, { section: "python" }],
    [
      { maxSteps: 2, interpreter: ["/x"], serverArgs: [], trace: { server: "verbose" } },
      { interpreter: "kept" },
    ],
  );
  assert.deepEqual(answer, [{ maxSteps: 2 }, { interpreter: "kept" }]);
  assert.deepEqual(filterConfigurationAnswer([{ section: "kernelEvolve" }], [null]), [null]);
});

test("package.json contributes every server setting and the client's own, and nothing else", () => {
  const contributed = Object.keys(properties).map((k) => k.replace(/^kernelEvolve\./, "").split(".")[0]);
  assert.deepEqual(new Set(contributed), new Set([...SERVER_SETTING_KEYS, ...CLIENT_SETTING_KEYS]));
  assert.equal(contributed.length, new Set(contributed).size, "no setting contributed twice");
});

test("package.json contributes exactly the commands the extension registers", () => {
  const ids = manifest.contributes.commands.map((c: { command: string }) => c.command);
  assert.deepEqual(new Set(ids), new Set(Object.values(CLIENT_COMMANDS)));
  assert.ok(ids.every((id: string) => !id.startsWith("kernelEvolve.")), "server command ids belong to the client library");
});

test("only interpreter and serverArgs changes restart the server", () => {
  assert.equal(needsRestart((k) => k === "kernelEvolve.interpreter"), true);
  assert.equal(needsRestart((k) => k === "kernelEvolve.serverArgs"), true);
  assert.equal(needsRestart((k) => k === "kernelEvolve.maxSteps"), false);
});
