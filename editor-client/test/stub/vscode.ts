// A small stand-in for the `vscode` module: the parts the extension uses, recording what it does.
// Tests read and script it through `stub` (e.g. stub.config, stub.quickPick, stub.calls).

export class Disposable {
  constructor(private readonly fn: () => void = () => undefined) {}
  dispose(): void {
    this.fn();
  }
}

export class EventEmitter<T> {
  private listeners: ((e: T) => void)[] = [];
  readonly event = (listener: (e: T) => void): Disposable => {
    this.listeners.push(listener);
    return new Disposable(() => (this.listeners = this.listeners.filter((l) => l !== listener)));
  };
  fire(e: T): void {
    for (const l of [...this.listeners]) l(e);
  }
  dispose(): void {
    this.listeners = [];
  }
}

export class Uri {
  private constructor(
    readonly scheme: string,
    readonly authority: string,
    readonly path: string,
  ) {}

  static parse(text: string): Uri {
    const m = /^([a-zA-Z][\w+.-]*):(?:\/\/([^/]*))?(.*)$/.exec(text);
    if (!m) throw new Error(`stub Uri.parse: not a URI: ${text}`);
    return new Uri(m[1], m[2] ?? "", m[3]);
  }

  static file(fsPath: string): Uri {
    return new Uri("file", "", fsPath.split("/").map(encodeURIComponent).join("/"));
  }

  get fsPath(): string {
    return decodeURIComponent(this.path);
  }

  toString(): string {
    return `${this.scheme}:${this.scheme === "file" || this.authority ? `//${this.authority}` : ""}${this.path}`;
  }
}

export class CancellationTokenSource {
  private readonly emitter = new EventEmitter<void>();
  readonly token = { isCancellationRequested: false, onCancellationRequested: this.emitter.event };
  cancel(): void {
    if (this.token.isCancellationRequested) return;
    this.token.isCancellationRequested = true;
    this.emitter.fire();
  }
  dispose(): void {
    this.emitter.dispose();
  }
}

export enum ProgressLocation {
  SourceControl = 1,
  Window = 10,
  Notification = 15,
}

/** One `window.withProgress` the client library opened (work-done progress from the server). */
export interface StubProgress {
  options: { title?: string; cancellable?: boolean; location?: ProgressLocation };
  reports: { message?: string; increment?: number }[];
  done: boolean;
  /** What clicking Cancel on the notification does. */
  cancel(): void;
}

export enum StatusBarAlignment {
  Left = 1,
  Right = 2,
}

export class Position {
  constructor(
    readonly line: number,
    readonly character: number,
  ) {}
}

export class Selection {
  readonly start: Position;
  readonly end: Position;
  readonly active: Position;
  constructor(anchorLine: number, anchorChar: number, activeLine: number, activeChar: number) {
    this.start = new Position(anchorLine, anchorChar);
    this.end = new Position(activeLine, activeChar);
    this.active = this.end;
  }
}

export interface StubStatusBarItem {
  id: string;
  text: string;
  tooltip: string | undefined;
  name: string | undefined;
  command: string | undefined;
  visible: boolean;
  show(): void;
  hide(): void;
  dispose(): void;
}

export interface Call {
  api: string;
  args: unknown[];
}

type QuickPickAnswer = (items: unknown[], options: unknown) => unknown;

interface ContentProvider {
  provideTextDocumentContent(uri: Uri): string;
}

/** Everything a test scripts or inspects. */
export const stub = {
  calls: [] as Call[],
  config: {} as Record<string, unknown>,
  commands: new Map<string, (...args: unknown[]) => unknown>(),
  providers: new Map<string, ContentProvider>(),
  languageProviders: new Map<string, unknown>(),
  progress: [] as StubProgress[],
  statusItems: [] as StubStatusBarItem[],
  outputLines: [] as string[],
  configListeners: [] as ((e: { affectsConfiguration(key: string): boolean }) => void)[],
  extensions: new Map<string, unknown>(),
  quickPick: ((items: unknown[]) => items[0]) as QuickPickAnswer,
  messageAnswer: undefined as string | undefined,
  workspaceFolders: undefined as { uri: Uri; name: string; index: number }[] | undefined,
  reset(): void {
    this.calls = [];
    this.config = {};
    this.commands.clear();
    this.providers.clear();
    this.languageProviders.clear();
    this.progress = [];
    workspace.textDocuments = [];
    this.statusItems = [];
    this.outputLines = [];
    this.configListeners = [];
    this.extensions.clear();
    this.quickPick = (items: unknown[]) => items[0];
    this.messageAnswer = undefined;
    this.workspaceFolders = undefined;
    window.activeTextEditor = undefined;
  },
  called(api: string): Call[] {
    return this.calls.filter((c) => c.api === api);
  },
  /** Fires onDidChangeConfiguration for the given changed keys. */
  changeConfiguration(changed: string[]): void {
    const event = { affectsConfiguration: (key: string) => changed.some((c) => c === key || c.startsWith(`${key}.`)) };
    for (const l of [...this.configListeners]) l(event);
  },
};

function provider(kind: string) {
  return (selector: unknown, impl: unknown): Disposable => {
    stub.languageProviders.set(kind, impl);
    return new Disposable(() => stub.languageProviders.delete(kind));
  };
}

function record(api: string, args: unknown[]): void {
  stub.calls.push({ api, args });
}

function message(api: string) {
  return (text: string, ...items: unknown[]): Promise<string | undefined> => {
    record(api, [text, ...items]);
    return Promise.resolve(stub.messageAnswer);
  };
}

export const window = {
  activeTextEditor: undefined as unknown,
  createStatusBarItem(id: string, _alignment?: StatusBarAlignment, _priority?: number): StubStatusBarItem {
    const item: StubStatusBarItem = {
      id,
      text: "",
      tooltip: undefined,
      name: undefined,
      command: undefined,
      visible: false,
      show() {
        item.visible = true;
      },
      hide() {
        item.visible = false;
      },
      dispose() {
        item.visible = false;
      },
    };
    stub.statusItems.push(item);
    return item;
  },
  createOutputChannel(name: string) {
    return {
      name,
      append: (text: string) => stub.outputLines.push(text),
      appendLine: (line: string) => stub.outputLines.push(line),
      show: (...args: unknown[]) => record("output.show", args),
      dispose: () => undefined,
    };
  },
  showInformationMessage: message("window.showInformationMessage"),
  showWarningMessage: message("window.showWarningMessage"),
  showErrorMessage: message("window.showErrorMessage"),
  withProgress<R>(
    options: StubProgress["options"],
    task: (progress: { report(v: { message?: string; increment?: number }): void }, token: unknown) => Thenable<R>,
  ): Promise<R> {
    const source = new CancellationTokenSource();
    const entry: StubProgress = { options, reports: [], done: false, cancel: () => source.cancel() };
    stub.progress.push(entry);
    return Promise.resolve(task({ report: (v) => entry.reports.push(v) }, source.token)).finally(() => {
      entry.done = true;
    });
  },
  showQuickPick(items: unknown[], options?: unknown): Promise<unknown> {
    record("window.showQuickPick", [items, options]);
    return Promise.resolve(stub.quickPick(items, options));
  },
  showTextDocument(doc: unknown, options?: unknown): Promise<unknown> {
    record("window.showTextDocument", [doc, options]);
    return Promise.resolve({ document: doc });
  },
};

/** An event that never fires (documents are not opened in the stub unless a test does it). */
function quietEvent(): (listener: unknown) => Disposable {
  return () => new Disposable();
}

export const workspace = {
  textDocuments: [] as unknown[],
  onDidOpenTextDocument: quietEvent(),
  onDidChangeTextDocument: quietEvent(),
  onDidCloseTextDocument: quietEvent(),
  onDidSaveTextDocument: quietEvent(),
  onWillSaveTextDocument: quietEvent(),
  onDidCreateFiles: quietEvent(),
  onDidDeleteFiles: quietEvent(),
  onDidRenameFiles: quietEvent(),
  onWillCreateFiles: quietEvent(),
  onWillDeleteFiles: quietEvent(),
  onWillRenameFiles: quietEvent(),
  onDidChangeWorkspaceFolders: quietEvent(),
  get workspaceFolders() {
    return stub.workspaceFolders;
  },
  /** Reads stub.config by dotted key; a key that is a prefix answers the nested object, as VS Code does. */
  getConfiguration(section?: string) {
    const prefix = section ? `${section}.` : "";
    return {
      get<T>(key: string, fallback?: T): T | undefined {
        const full = `${prefix}${key}`;
        if (full in stub.config) return stub.config[full] as T;
        const nested: Record<string, unknown> = {};
        for (const [k, v] of Object.entries(stub.config)) {
          if (!k.startsWith(`${full}.`)) continue;
          const parts = k.slice(full.length + 1).split(".");
          let node = nested;
          for (const p of parts.slice(0, -1)) node = (node[p] ??= {}) as Record<string, unknown>;
          node[parts[parts.length - 1]] = v;
        }
        return Object.keys(nested).length > 0 ? (nested as T) : fallback;
      },
      has: (key: string) => `${prefix}${key}` in stub.config,
    };
  },
  registerTextDocumentContentProvider(scheme: string, provider: ContentProvider): Disposable {
    stub.providers.set(scheme, provider);
    return new Disposable(() => stub.providers.delete(scheme));
  },
  onDidChangeConfiguration(listener: (e: { affectsConfiguration(key: string): boolean }) => void): Disposable {
    stub.configListeners.push(listener);
    return new Disposable(() => (stub.configListeners = stub.configListeners.filter((l) => l !== listener)));
  },
  openTextDocument(uri: Uri): Promise<{ uri: Uri; languageId: string; getText(): string }> {
    record("workspace.openTextDocument", [uri]);
    const provider = stub.providers.get(uri.scheme);
    const text = provider ? provider.provideTextDocumentContent(uri) : "";
    return Promise.resolve({ uri, languageId: "plaintext", getText: () => text });
  },
};

type Selector = { scheme?: string; language?: string } | string;

export const languages = {
  /** Providers the client library registers, by kind: a test calls them as VS Code would. */
  match(selector: Selector | Selector[], doc: { uri: Uri; languageId: string }): number {
    const list = Array.isArray(selector) ? selector : [selector];
    const hit = list.some((s) =>
      typeof s === "string"
        ? s === doc.languageId
        : (s.scheme === undefined || s.scheme === doc.uri.scheme) && (s.language === undefined || s.language === doc.languageId),
    );
    return hit ? 10 : 0;
  },
  registerCodeActionsProvider: provider("codeAction"),
  registerHoverProvider: provider("hover"),
  registerInlayHintsProvider: provider("inlayHint"),
  createDiagnosticCollection(name?: string) {
    const entries = new Map<string, unknown[]>();
    return {
      name,
      set: (uri: Uri, diagnostics: unknown[]) => entries.set(uri.toString(), diagnostics),
      delete: (uri: Uri) => entries.delete(uri.toString()),
      get: (uri: Uri) => entries.get(uri.toString()),
      has: (uri: Uri) => entries.has(uri.toString()),
      forEach: (fn: (uri: string, d: unknown[]) => void) => entries.forEach((d, u) => fn(u, d)),
      clear: () => entries.clear(),
      dispose: () => entries.clear(),
    };
  },
  setTextDocumentLanguage(doc: { languageId: string }, language: string): Promise<unknown> {
    record("languages.setTextDocumentLanguage", [doc, language]);
    doc.languageId = language;
    return Promise.resolve(doc);
  },
};

export const commands = {
  registerCommand(id: string, fn: (...args: unknown[]) => unknown): Disposable {
    if (stub.commands.has(id)) throw new Error(`command '${id}' already exists`);
    stub.commands.set(id, fn);
    return new Disposable(() => stub.commands.delete(id));
  },
  executeCommand(id: string, ...args: unknown[]): Promise<unknown> {
    record(`commands.executeCommand:${id}`, args);
    const fn = stub.commands.get(id);
    return Promise.resolve(fn ? fn(...args) : undefined);
  },
};

export const extensions = {
  getExtension(id: string): unknown {
    return stub.extensions.get(id);
  },
};

/** A Python editor on `uri` with the cursor at `line` (what `window.activeTextEditor` returns). */
export function pythonEditor(uri: string, line: number, languageId = "python") {
  return {
    document: { uri: Uri.parse(uri), languageId, isUntitled: uri.startsWith("untitled:") },
    selection: new Selection(line, 0, line, 0),
  };
}

// Classes vscode-languageclient extends at load time; the extension itself never builds them.
export class CallHierarchyItem {}
export class CodeLens {}
export class CompletionItem {}
export class DocumentLink {}
export class InlayHint {}
export class SymbolInformation {}
export class TypeHierarchyItem {}
export class CodeAction {
  command?: { title: string; command: string; arguments?: unknown[] };
  disabled?: { reason: string };
  constructor(
    readonly title: string,
    public kind?: CodeActionKind,
  ) {}
}

export enum CodeActionTriggerKind {
  Invoke = 1,
  Automatic = 2,
}
export class Diagnostic {}
export class CancellationError extends Error {}
export const version = "1.95.0";

export const env = {
  appName: "Visual Studio Code",
  appRoot: "",
  language: "en",
  machineId: "stub-machine",
  sessionId: "stub-session",
  uriScheme: "vscode",
};

export class CodeActionKind {
  static readonly Empty = new CodeActionKind("");
  static readonly QuickFix = new CodeActionKind("quickfix");
  static readonly Refactor = new CodeActionKind("refactor");
  static readonly RefactorExtract = new CodeActionKind("refactor.extract");
  static readonly RefactorInline = new CodeActionKind("refactor.inline");
  static readonly RefactorMove = new CodeActionKind("refactor.move");
  static readonly RefactorRewrite = new CodeActionKind("refactor.rewrite");
  static readonly Source = new CodeActionKind("source");
  static readonly SourceOrganizeImports = new CodeActionKind("source.organizeImports");
  static readonly SourceFixAll = new CodeActionKind("source.fixAll");
  static readonly Notebook = new CodeActionKind("notebook");
  constructor(readonly value: string) {}
  append(part: string): CodeActionKind {
    return new CodeActionKind(this.value ? `${this.value}.${part}` : part);
  }
}

/** A Python document as VS Code hands it to the client library (enough for didOpen). */
export function textDocument(uri: string, text: string, languageId = "python") {
  const parsed = Uri.parse(uri);
  return {
    uri: parsed,
    fileName: parsed.fsPath,
    languageId,
    version: 1,
    isUntitled: parsed.scheme === "untitled",
    isDirty: false,
    isClosed: false,
    lineCount: text.split("\n").length,
    getText: () => text,
  };
}
