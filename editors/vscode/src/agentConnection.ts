import { spawn, type ChildProcess } from "node:child_process";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";
import type {
  InitializeResponse,
  ReadTextFileRequest,
  ReadTextFileResponse,
  RequestPermissionRequest,
  RequestPermissionResponse,
  SessionNotification,
  WriteTextFileRequest,
} from "@agentclientprotocol/sdk";
import type { AgentCommand } from "./agentLocator";
import { Terminals } from "./terminals";
import { tapStream, type TrafficListener } from "./traffic";

/** What the editor does for the agent: files, permissions, and what it shows. */
export interface ClientSide {
  readTextFile(request: ReadTextFileRequest): Promise<ReadTextFileResponse>;
  writeTextFile(request: WriteTextFileRequest): Promise<void>;
  requestPermission(request: RequestPermissionRequest, signal: AbortSignal): Promise<RequestPermissionResponse>;
  sessionUpdate(notification: SessionNotification): void;
  terminals: Terminals;
  /** Where a terminal runs when the agent names no cwd. */
  defaultCwd(): string;
}

export interface ConnectOptions {
  cwd: string;
  onStderr?: (text: string) => void;
  onTraffic?: TrafficListener;
  onExit?: (code: number | null, signal: NodeJS.Signals | null) => void;
}

export const CLIENT_CAPABILITIES: acp.ClientCapabilities = {
  fs: { readTextFile: true, writeTextFile: true },
  terminal: true,
};

/** A running `hermes-acp --stdio` and the ACP connection to it. */
export class AgentConnection {
  private exited = false;
  /** Why the process could not be started (spawn ENOENT, EACCES), once known. */
  startError: Error | undefined;
  /** It answered `initialize`: an exit after that is a crash, not a failed start. */
  initialized = false;

  private constructor(
    readonly child: ChildProcess,
    readonly connection: acp.ClientConnection,
    readonly exit: Promise<void>,
  ) {}

  static start(command: AgentCommand, side: ClientSide, options: ConnectOptions): AgentConnection {
    const child = spawn(command.command, command.args, {
      cwd: options.cwd,
      env: { ...process.env, ...command.env },
      stdio: ["pipe", "pipe", "pipe"],
    });
    child.stderr?.setEncoding("utf8");
    child.stderr?.on("data", (text: string) => options.onStderr?.(text));
    let agent: AgentConnection | undefined;
    let startError: Error | undefined;
    const exit = new Promise<void>((resolve) => {
      child.on("error", (error) => {
        options.onStderr?.(`could not start ${command.command}: ${error.message}\n`);
        startError = error;
        if (agent) agent.startError = error;
        resolve();
      });
      child.on("exit", (code, signal) => {
        options.onExit?.(code, signal);
        resolve();
      });
    });
    let stream = acp.ndJsonStream(
      Writable.toWeb(child.stdin!) as WritableStream<Uint8Array>,
      Readable.toWeb(child.stdout!) as ReadableStream<Uint8Array>,
    );
    if (options.onTraffic) {
      stream = tapStream(stream, options.onTraffic);
    }
    const app = acp
      .client({ name: "hermes-vscode" })
      .onRequest(acp.methods.client.fs.readTextFile, ({ params }) => side.readTextFile(params))
      .onRequest(acp.methods.client.fs.writeTextFile, async ({ params }) => {
        await side.writeTextFile(params);
        return {};
      })
      .onRequest(acp.methods.client.session.requestPermission, ({ params, signal }) =>
        side.requestPermission(params, signal),
      )
      .onNotification(acp.methods.client.session.update, ({ params }) => side.sessionUpdate(params))
      .onRequest(acp.methods.client.terminal.create, ({ params }) => ({
        terminalId: side.terminals.create(params, side.defaultCwd()),
      }))
      .onRequest(acp.methods.client.terminal.output, ({ params }) => side.terminals.output(params.terminalId))
      .onRequest(acp.methods.client.terminal.waitForExit, ({ params }) =>
        side.terminals.waitForExit(params.terminalId),
      )
      .onRequest(acp.methods.client.terminal.kill, ({ params }) => {
        side.terminals.kill(params.terminalId);
        return {};
      })
      .onRequest(acp.methods.client.terminal.release, ({ params }) => {
        side.terminals.release(params.terminalId);
        return {};
      });
    const connection = app.connect(stream);
    agent = new AgentConnection(child, connection, exit);
    agent.startError = startError;
    const started = agent;
    void exit.then(() => {
      started.exited = true;
      connection.close();
    });
    return started;
  }

  get alive(): boolean {
    return !this.exited;
  }

  get agent(): acp.ClientContext {
    return this.connection.agent;
  }

  initialize(): Promise<InitializeResponse> {
    return this.agent.request(acp.methods.agent.initialize, {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: CLIENT_CAPABILITIES,
      clientInfo: { name: "hermes-vscode", title: "Hermes for VS Code", version: "0.1.0" },
    });
  }

  /** Ends the agent: close its stdin, then SIGTERM if it lingers. */
  async stop(): Promise<void> {
    if (this.exited) {
      return;
    }
    this.child.stdin?.end();
    const timer = setTimeout(() => this.child.kill("SIGTERM"), 2000);
    await this.exit;
    clearTimeout(timer);
  }
}
