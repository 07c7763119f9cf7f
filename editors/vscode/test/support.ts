/** Real parts for the extension's tests: the repository's agent and its scripted model server. */
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { createInterface, type Interface } from "node:readline";

export const REPO = path.resolve(__dirname, "..", "..", "..");
export const PYTHON = process.env.HERMES_PYTHON ?? path.join(REPO, ".venv", "bin", "python");
export const AGENT = process.env.HERMES_AGENT ?? path.join(REPO, ".venv", "bin", "hermes-acp");

export interface ScriptedReply {
  text?: string;
  reasoning?: string;
  tool_calls?: Array<{ name: string; arguments: Record<string, unknown>; id?: string }>;
  chunk_size?: number;
  chunk_delay?: number;
  hold_after_first_text?: boolean;
  stall?: number;
  delay?: number;
  usage?: [number, number, number];
  status?: number;
  error_kind?: string;
  error_message?: string;
}

/** tests/support/fake_provider.py in a child process, scripted over its stdin. */
export class FakeModel {
  private constructor(
    private readonly child: ChildProcessWithoutNullStreams,
    private readonly lines: Interface,
    readonly url: string,
  ) {}

  static async start(): Promise<FakeModel> {
    const child = spawn(PYTHON, [path.join(__dirname, "fake_model.py")], { cwd: REPO, env: { ...process.env, PYTHONPATH: REPO } });
    child.stderr.pipe(process.stderr);
    const lines = createInterface({ input: child.stdout });
    const first = await nextLine(lines);
    return new FakeModel(child, lines, (JSON.parse(first) as { url: string }).url);
  }

  async script(replies: ScriptedReply[]): Promise<void> {
    this.child.stdin.write(`${JSON.stringify({ script: replies })}\n`);
    await nextLine(this.lines);
  }

  /** A stream held after its first text (`hold_after_first_text`) goes on. */
  async release(): Promise<void> {
    this.child.stdin.write(`${JSON.stringify({ release: true })}\n`);
    await nextLine(this.lines);
  }

  async requests(): Promise<{ count: number; pending: number; last: unknown; headers: Record<string, string> | null }> {
    this.child.stdin.write(`${JSON.stringify({ requests: true })}\n`);
    return JSON.parse(await nextLine(this.lines)) as { count: number; pending: number; last: unknown; headers: Record<string, string> | null };
  }

  /** The environment that points the agent at this server, with its store under `home`. */
  agentEnv(home: string): Record<string, string> {
    return {
      HOME: home,
      HERMES_ACP_HOME: path.join(home, ".hermes-acp"),
      // Each test's home would keep a warm server of its own alive for ten minutes.
      HERMES_ACP_WARM: "0",
      HERMES_ACP_PROVIDER: "openai",
      HERMES_ACP_MODEL: "gpt-4.1",
      OPENAI_API_KEY: "test",
      OPENAI_BASE_URL: this.url,
      HERMES_ACP_RETRY_BASE_SECONDS: "0.01",
      HERMES_ACP_RETRY_CAP_SECONDS: "0.05",
    };
  }

  async stop(): Promise<void> {
    const exited = new Promise((resolve) => this.child.on("exit", resolve));
    this.child.stdin.end();
    await exited;
  }
}

function nextLine(lines: Interface): Promise<string> {
  return new Promise((resolve, reject) => {
    const onLine = (line: string): void => {
      lines.off("close", onClose);
      resolve(line);
    };
    const onClose = (): void => reject(new Error("the fake model server exited"));
    lines.once("line", onLine);
    lines.once("close", onClose);
  });
}

export function scratchDir(name: string): string {
  return mkdtempSync(path.join(tmpdir(), `hermes-vscode-${name}-`));
}
