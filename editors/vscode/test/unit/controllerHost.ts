/** A ControllerHost for tests: files on disk overlaid by "open buffers", every post recorded. */
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import type { ReadTextFileRequest, WriteTextFileRequest } from "@agentclientprotocol/sdk";
import type { AgentCommand } from "../../src/agentLocator";
import { ChatController } from "../../src/chatController";
import type { ToView } from "../../src/protocol";
import { AGENT, type FakeModel } from "../support";

export class TestHost {
  readonly posts: ToView[] = [];
  readonly buffers = new Map<string, string>();
  readonly writes: WriteTextFileRequest[] = [];
  /** The raw ACP traffic, as the "Show raw ACP traffic" channel gets it. */
  readonly traffic: Array<["in" | "out", Record<string, unknown>]> = [];
  readonly controller: ChatController;
  /** Sessions the controller asked the host to remember, in order. */
  readonly chosen: string[] = [];
  /** Set it to hold `sessionChosen` (as slow storage would) until the promise settles. */
  remembering: Promise<void> = Promise.resolve();
  private waiters: Array<() => void> = [];
  /** What the user answers when Undo would lose their later edits. */
  confirmAnswer = false;

  constructor(readonly cwd: string, command: AgentCommand | undefined) {
    this.controller = new ChatController({
      locateAgent: () => command,
      cwd: () => cwd,
      traffic: (direction, message) => this.traffic.push([direction, message as Record<string, unknown>]),
      post: (message) => {
        this.posts.push(message);
        for (const wake of this.waiters.splice(0)) wake();
      },
      sessionChosen: (sessionId) => {
        this.chosen.push(sessionId);
        for (const wake of this.waiters.splice(0)) wake();
        return this.remembering;
      },
      files: {
        readTextFile: async (request: ReadTextFileRequest) => ({ content: this.buffers.get(request.path) ?? readFileSync(request.path, "utf8") }),
        writeTextFile: async (request: WriteTextFileRequest) => {
          this.writes.push(request);
          writeFileSync(request.path, request.content);
        },
      },
      fileAccess: {
        read: async (file) => this.buffers.get(file) ?? (existsSync(file) ? readFileSync(file, "utf8") : undefined),
        readDisk: async (file) => (existsSync(file) ? readFileSync(file, "utf8") : undefined),
        restore: async (file, text) => {
          this.buffers.delete(file);
          if (text === undefined) rmSync(file, { force: true });
          else writeFileSync(file, text);
        },
      },
      confirm: async () => this.confirmAnswer,
    });
  }

  static forAgent(cwd: string, fake: FakeModel, home: string): TestHost {
    return new TestHost(cwd, { command: AGENT, args: ["--stdio"], env: fake.agentEnv(home), source: "test" });
  }

  of<T extends ToView["type"]>(type: T): Array<Extract<ToView, { type: T }>> {
    return this.posts.filter((post): post is Extract<ToView, { type: T }> => post.type === type);
  }

  /** Waits until `predicate` holds (woken by each post and each chosen session, no polling). */
  async waitFor<T>(predicate: () => T | undefined | false): Promise<T> {
    for (;;) {
      const found = predicate();
      if (found) return found;
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }

  text(kind: "agent_message_chunk" | "agent_thought_chunk" | "user_message_chunk" = "agent_message_chunk"): string {
    return this.of("update")
      .map((post) => post.update)
      .filter((update) => update.sessionUpdate === kind)
      .map((update) => {
        const content = "content" in update ? update.content : undefined;
        return content && !Array.isArray(content) && content.type === "text" ? content.text : "";
      })
      .join("");
  }
}
