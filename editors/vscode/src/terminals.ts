import { spawn, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import type {
  CreateTerminalRequest,
  TerminalExitStatus,
  TerminalOutputResponse,
} from "@agentclientprotocol/sdk";

/** What a terminal shows while it runs: the VS Code Pseudoterminal and the chat view. */
export interface TerminalSink {
  opened(id: string, commandLine: string): void;
  output(id: string, text: string): void;
  exited(id: string, status: TerminalExitStatus): void;
  released(id: string): void;
}

interface RunningTerminal {
  child: ChildProcess;
  chunks: Buffer[];
  bytes: number;
  limit: number | undefined;
  truncated: boolean;
  exit: TerminalExitStatus | undefined;
  exited: Promise<TerminalExitStatus>;
}

/** Keeps the newest `limit` bytes, cut on a UTF-8 character boundary (ACP truncates the start). */
export function keepTail(buffer: Buffer, limit: number): Buffer {
  if (buffer.length <= limit) {
    return buffer;
  }
  let start = buffer.length - limit;
  // A continuation byte (10xxxxxx) is not where a character starts.
  while (start < buffer.length && (buffer[start]! & 0xc0) === 0x80) {
    start++;
  }
  return buffer.subarray(start);
}

/**
 * The command as the user would write it. The agent runs a command as `bash -c LINE`, inside
 * its sandbox launcher (`bwrap … bash -c LINE`): the user wrote LINE, not the wrapper.
 */
export function shownCommand(request: Pick<CreateTerminalRequest, "command" | "args" | "_meta">): string {
  const meta = (request._meta as { hermes?: { command?: unknown } } | null | undefined)?.hermes?.command;
  if (typeof meta === "string" && meta) return meta;
  const argv = [request.command, ...(request.args ?? [])];
  // The agent's sandbox launcher: `…/sandboxed '<command line>'`.
  if (argv.length === 2 && /(^|\/)sandboxed$/.test(argv[0]!)) return argv[1]!;
  for (let i = argv.length - 3; i >= 0; i--) {
    if (/(^|\/)(ba)?sh$/.test(argv[i]!) && argv[i + 1] === "-c" && i + 3 === argv.length) return argv[i + 2]!;
  }
  return argv.join(" ");
}

/** The client side of ACP's `terminal/*`: commands as child processes of the extension host. */
export class Terminals {
  private readonly running = new Map<string, RunningTerminal>();

  constructor(private readonly sink: TerminalSink) {}

  create(request: CreateTerminalRequest, defaultCwd: string): string {
    const id = `term-${randomUUID()}`;
    const env: NodeJS.ProcessEnv = { ...process.env };
    for (const variable of request.env ?? []) {
      env[variable.name] = variable.value;
    }
    const child = spawn(request.command, request.args ?? [], {
      cwd: request.cwd ?? defaultCwd,
      env,
      stdio: ["ignore", "pipe", "pipe"],
      detached: true, // its own process group, so kill reaches what it started
    });
    const limit = request.outputByteLimit ?? undefined;
    const terminal: RunningTerminal = {
      child,
      chunks: [],
      bytes: 0,
      limit: limit === null ? undefined : limit,
      truncated: false,
      exit: undefined,
      exited: new Promise((resolve) => {
        child.on("close", (code, signal) => {
          terminal.exit = { exitCode: code, signal: signal ?? null };
          this.sink.exited(id, terminal.exit);
          resolve(terminal.exit);
        });
        child.on("error", (error) => {
          this.append(id, terminal, Buffer.from(`${error.message}\n`));
          if (child.exitCode === null && child.pid === undefined) {
            terminal.exit = { exitCode: 127, signal: null };
            this.sink.exited(id, terminal.exit);
            resolve(terminal.exit);
          }
        });
      }),
    };
    this.running.set(id, terminal);
    const commandLine = shownCommand(request);
    this.sink.opened(id, commandLine);
    child.stdout?.on("data", (data: Buffer) => this.append(id, terminal, data));
    child.stderr?.on("data", (data: Buffer) => this.append(id, terminal, data));
    return id;
  }

  private append(id: string, terminal: RunningTerminal, data: Buffer): void {
    terminal.chunks.push(data);
    terminal.bytes += data.length;
    if (terminal.limit !== undefined && terminal.bytes > terminal.limit) {
      const kept = keepTail(Buffer.concat(terminal.chunks), terminal.limit);
      terminal.chunks = [kept];
      terminal.bytes = kept.length;
      terminal.truncated = true;
    }
    this.sink.output(id, data.toString("utf8"));
  }

  private get(id: string): RunningTerminal {
    const terminal = this.running.get(id);
    if (!terminal) {
      throw new Error(`no terminal ${id} (released or never created)`);
    }
    return terminal;
  }

  output(id: string): TerminalOutputResponse {
    const terminal = this.get(id);
    return {
      output: Buffer.concat(terminal.chunks).toString("utf8"),
      truncated: terminal.truncated,
      exitStatus: terminal.exit ?? null,
    };
  }

  waitForExit(id: string): Promise<TerminalExitStatus> {
    return this.get(id).exited;
  }

  kill(id: string): void {
    const terminal = this.get(id);
    if (terminal.exit === undefined && terminal.child.pid !== undefined) {
      try {
        process.kill(-terminal.child.pid, "SIGKILL");
      } catch {
        terminal.child.kill("SIGKILL");
      }
    }
  }

  release(id: string): void {
    if (!this.running.has(id)) {
      return;
    }
    this.kill(id);
    this.running.delete(id);
    this.sink.released(id);
  }

  releaseAll(): void {
    for (const id of [...this.running.keys()]) {
      this.release(id);
    }
  }
}
