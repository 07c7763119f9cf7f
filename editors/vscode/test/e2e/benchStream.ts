/**
 * A long answer streamed as 10,000 deltas, measured in a real VS Code beside the agent alone
 * (a bare ACP client on the agent's pipes) in the same run:
 *   prompt -> the whole answer arrived (agent) / rendered in the view (view)
 *   the view's frame times while it streams (requestAnimationFrame intervals in the webview)
 * Writes test-output/bench-stream.json.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import * as acp from "@agentclientprotocol/sdk";
import { AgentConnection } from "../../src/agentConnection";
import { Terminals } from "../../src/terminals";
import { AGENT, FakeModel, scratchDir } from "../support";
import { OUTPUT, startFixture } from "./fixture";
import { chatFrameHandle, runCommand } from "./workbench";

const DELTAS = 10_000;
// Short words so the answer wraps like prose: 10,000 deltas of 2 characters.
const REPLY = { text: "a ".repeat(DELTAS), chunk_size: 2 };

function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

async function agentAlone(fake: FakeModel): Promise<{ totalMs: number; chunks: number }> {
  const home = scratchDir("bench-stream-home");
  let chunks = 0;
  const agent = AgentConnection.start(
    { command: AGENT, args: ["--stdio"], env: fake.agentEnv(home), source: "bench" },
    {
      readTextFile: async () => ({ content: "" }),
      writeTextFile: async () => undefined,
      requestPermission: async () => ({ outcome: { outcome: "cancelled" } }),
      sessionUpdate: (notification) => {
        if (notification.update.sessionUpdate === "agent_message_chunk") chunks++;
      },
      terminals: new Terminals({ opened() {}, output() {}, exited() {}, released() {} }),
      defaultCwd: () => home,
    },
    { cwd: home },
  );
  await agent.initialize();
  const session = await agent.agent.request(acp.methods.agent.session.new, { cwd: home, mcpServers: [] });
  await fake.script([REPLY]);
  const sent = performance.now();
  await agent.agent.request(acp.methods.agent.session.prompt, { sessionId: session.sessionId, prompt: [{ type: "text", text: "go" }] });
  const totalMs = performance.now() - sent;
  await agent.stop();
  return { totalMs, chunks };
}

async function inTheView(): Promise<{ totalMs: number; frames: number; p50: number; p95: number; max: number; over50: number }> {
  const f = await startFixture({ name: "bench-stream", files: { "app.py": "print('old')\n" } });
  try {
    await runCommand(f.page, "Hermes: Open chat");
    await f.chat.locator('#status[data-state="ready"]').waitFor();
    const frame = await chatFrameHandle(f.page);
    await f.fake.script([REPLY]);
    await frame.evaluate("globalThis.__name = globalThis.__name || ((fn) => fn)"); // tsx's keepNames helper
    await frame.evaluate((expected) => {
      const w = window as unknown as { frames_: number[]; doneAt?: number; enterAt?: number };
      w.frames_ = [];
      let last = performance.now();
      const tick = (now: number): void => {
        w.frames_.push(now - last);
        last = now;
        const answer = document.querySelector(".message.agent");
        if ((answer?.textContent ?? "").replace(/\s/g, "").length >= expected) {
          w.doneAt = now;
          return;
        }
        requestAnimationFrame(tick);
      };
      document.getElementById("input")!.addEventListener("keydown", () => {
        w.enterAt = performance.now();
        last = w.enterAt;
        requestAnimationFrame(tick);
      }, { capture: true, once: true });
    }, DELTAS);
    await f.chat.locator("#input").fill("go");
    await f.chat.locator("#input").press("Enter");
    await frame.waitForFunction(() => (window as unknown as { doneAt?: number }).doneAt !== undefined, undefined, { timeout: 300_000 });
    const { frames, totalMs } = await frame.evaluate(() => {
      const w = window as unknown as { frames_: number[]; doneAt: number; enterAt: number };
      return { frames: w.frames_, totalMs: w.doneAt - w.enterAt };
    });
    await f.shot("bench-stream");
    return { totalMs, frames: frames.length, p50: quantile(frames, 0.5), p95: quantile(frames, 0.95), max: Math.max(...frames), over50: frames.filter((ms) => ms > 50).length };
  } finally {
    await f.close();
  }
}

async function main(): Promise<void> {
  const fake = await FakeModel.start();
  const agent = await agentAlone(fake).finally(() => fake.stop());
  const view = await inTheView();
  const result = { deltas: DELTAS, agent, view };
  mkdirSync(OUTPUT, { recursive: true });
  writeFileSync(path.join(OUTPUT, "bench-stream.json"), JSON.stringify(result, null, 2));
  console.log(JSON.stringify(result, null, 2));
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
