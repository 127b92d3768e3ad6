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
  showQuickPick(items: unknown[], options?: unknown): Promise<unknown> {
    record("window.showQuickPick", [items, options]);
    return Promise.resolve(stub.quickPick(items, options));
  },
  showTextDocument(doc: unknown, options?: unknown): Promise<unknown> {
    record("window.showTextDocument", [doc, options]);
    return Promise.resolve({ document: doc });
  },
};

export const workspace = {
  get workspaceFolders() {
    return stub.workspaceFolders;
  },
  getConfiguration(section?: string) {
    const prefix = section ? `${section}.` : "";
    return {
      get<T>(key: string, fallback?: T): T | undefined {
        const full = `${prefix}${key}`;
        return full in stub.config ? (stub.config[full] as T) : fallback;
      },
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

export const languages = {
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
export class CodeAction {}
export class Diagnostic {}
export class CancellationError extends Error {}
