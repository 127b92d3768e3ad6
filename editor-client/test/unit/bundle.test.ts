import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { test } from "node:test";

const ROOT = path.join(__dirname, "..", "..", "..");

test("the bundle package.json names as main loads and exports activate and deactivate", () => {
  const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8"));
  const main = path.join(ROOT, manifest.main);
  assert.ok(fs.existsSync(main), `${manifest.main} missing: run \`make bundle\` (make unit does)`);
  // The bundle is CommonJS with `vscode` left external (our stub here).
  const bundle = require(main) as { activate?: unknown; deactivate?: unknown };
  assert.equal(typeof bundle.activate, "function");
  assert.equal(typeof bundle.deactivate, "function");
});

test("the manifest activates on Python files and targets the client library's VS Code engine", () => {
  const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8"));
  const lib = JSON.parse(fs.readFileSync(path.join(ROOT, "node_modules", "vscode-languageclient", "package.json"), "utf8"));
  assert.deepEqual(manifest.activationEvents, ["onLanguage:python"]);
  assert.equal(manifest.engines.vscode, lib.engines.vscode);
});
