// The LanguageClient: how `kernelevolve serve` is launched and what the client adds on the wire.

import * as vscode from "vscode";
import {
  ExecuteCommandRequest,
  LanguageClient,
  LanguageClientOptions,
  ServerOptions,
  State,
} from "vscode-languageclient/node";
import { Commands } from "./commands";
import { Interpreter, serverLaunch } from "./interpreter";
import { wireNotifications } from "./notifications";
import { filterConfigurationAnswer, SECTION, ServerSettings } from "./settings";

export const CLIENT_ID = "kernelEvolve"; // also the prefix of its trace setting: kernelEvolve.trace.server
export const CLIENT_NAME = "kernelevolve";

export interface ClientParts {
  interpreter: Interpreter;
  serverArgs: string[];
  settings: ServerSettings;
  cwd: string | undefined;
  output: vscode.OutputChannel;
  commands: Commands;
}

export function clientOptions(parts: ClientParts): LanguageClientOptions {
  return {
    documentSelector: [
      { scheme: "file", language: "python" },
      { scheme: "untitled", language: "python" },
    ],
    outputChannel: parts.output,
    revealOutputChannelOn: 4, // RevealOutputChannelOn.Never
    initializationOptions: { settings: parts.settings },
    synchronize: { configurationSection: SECTION },
    middleware: {
      workspace: {
        // VS Code answers with the whole `kernelEvolve` section; the server gets only its keys.
        configuration: async (params, token, next) => {
          const answer = await next(params, token);
          return Array.isArray(answer) ? filterConfigurationAnswer(params.items, answer) : answer;
        },
      },
      // Code actions run server commands through the client library; see their answers too.
      executeCommand: async (command, args, next) => {
        const result: unknown = await next(command, args);
        parts.commands.afterServerCommand(command, args, result);
        return result;
      },
    },
  };
}

export function serverOptions(parts: ClientParts): ServerOptions {
  const launch = serverLaunch(parts.interpreter, parts.serverArgs);
  return {
    command: launch.command,
    args: launch.args,
    // No `transport`: TransportKind.stdio would append `--stdio`, which `serve` rejects; stdio is the default.
    options: { cwd: parts.cwd, env: { ...process.env } },
  };
}

export function createClient(parts: ClientParts): LanguageClient {
  const client = new LanguageClient(CLIENT_ID, CLIENT_NAME, serverOptions(parts), clientOptions(parts));
  wireNotifications((method, handler) => client.onNotification(method, handler), parts.commands.tracker, parts.output);
  // A crashed server (the client library restarts it) takes its searches with it.
  client.onDidChangeState((e) => {
    if (e.newState === State.Stopped || (e.oldState === State.Running && e.newState === State.Starting)) {
      parts.commands.tracker.serverStopped();
    }
  });
  return client;
}

/** `workspace/executeCommand` through a running client. */
export function linkTo(client: LanguageClient) {
  return {
    execute: (command: string, arg?: object): Promise<unknown> =>
      client.sendRequest(ExecuteCommandRequest.type, { command, arguments: arg === undefined ? [] : [arg] }),
  };
}
