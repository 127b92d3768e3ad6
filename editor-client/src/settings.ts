// Which `kernelEvolve.*` settings go to the server, and which stay with the client.

export const SECTION = "kernelEvolve";

/** The server's settings (server/lsp/settings.py, camelCase); package.json contributes each. */
export const SERVER_SETTING_KEYS = [
  "strategy",
  "maxSteps",
  "timeBudgetS",
  "patience",
  "draftSize",
  "parallel",
  "targetSpeedup",
  "device",
  "backend",
  "hardware",
  "llm",
  "llmModel",
  "llmBudgetUsd",
  "dbPath",
  "watch",
] as const;

/** Settings only the extension reads; the server would report them as unknown. */
export const CLIENT_SETTING_KEYS = ["interpreter", "serverArgs", "trace"] as const;

export type ServerSettings = Record<string, unknown>;

/** The minimal view of `vscode.WorkspaceConfiguration` this module needs. */
export interface ConfigReader {
  get<T>(key: string): T | undefined;
}

/** The server's settings as the user configured them (defaults included), nothing else. */
export function serverSettings(config: ConfigReader): ServerSettings {
  const out: ServerSettings = {};
  for (const key of SERVER_SETTING_KEYS) {
    const value = config.get<unknown>(key);
    if (value !== undefined) {
      out[key] = value;
    }
  }
  return out;
}

/**
 * The `kernelEvolve` section of a `workspace/configuration` answer, stripped of the client's
 * own keys. Anything that is not an object is passed through for the server to report.
 */
export function filterSectionForServer(section: unknown): unknown {
  if (section === null || typeof section !== "object" || Array.isArray(section)) {
    return section;
  }
  const client = new Set<string>(CLIENT_SETTING_KEYS);
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(section as Record<string, unknown>)) {
    if (!client.has(key)) {
      out[key] = value;
    }
  }
  return out;
}

/** Filters the answer to `workspace/configuration` item by item (only our section is touched). */
export function filterConfigurationAnswer(
  items: { section?: string }[],
  answer: unknown[],
): unknown[] {
  return answer.map((value, i) => (items[i]?.section === SECTION ? filterSectionForServer(value) : value));
}

/** Settings whose change needs a server restart rather than a configuration pull. */
export function needsRestart(affects: (key: string) => boolean): boolean {
  return affects(`${SECTION}.interpreter`) || affects(`${SECTION}.serverArgs`);
}
