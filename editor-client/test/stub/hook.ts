// `node --require out/test/stub/hook.js`: `require("vscode")` resolves to our stub (no VS Code here).
import Module = require("module");

const stubPath = require.resolve("./vscode");
const mod = Module as unknown as {
  _resolveFilename(request: string, parent: unknown, isMain: boolean, options: unknown): string;
};
const original = mod._resolveFilename;
mod._resolveFilename = function (request: string, parent: unknown, isMain: boolean, options: unknown): string {
  if (request === "vscode") return stubPath;
  return original.call(this, request, parent, isMain, options);
};
