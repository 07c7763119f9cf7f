/**
 * The chat view's memory after a 500-message thread (250 prompts and answers), beside the
 * agent's own memory holding the same thread, in the same run:
 *   the webview's JS heap and DOM nodes once the thread is replayed into it (and the empty
 *   view's, for the difference)   vs   the agent's resident memory after loading it.
 * The thread is made through the agent alone (a bare ACP client on its pipes), then opened
 * from History in a fresh code-server window. Writes test-output/bench-memory.json.
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import * as acp from "@agentclientprotocol/sdk";
import type { Frame, Page } from "playwright-core";
import { AgentConnection } from "../../src/agentConnection";
import { Terminals } from "../../src/terminals";
import { AGENT, type FakeModel } from "../support";
import { OUTPUT, startFixture } from "./fixture";
import { chatFrameHandle, runCommand } from "./workbench";

const PROMPTS = Number(process.env.PROMPTS ?? 250);
const ANSWER = "Here is a short answer with `code`, a list:\n\n- one\n- two\n\n```python\nprint('hello')\n```\n";

function connect(fake: FakeModel, home: string, cwd: string): AgentConnection {
  return AgentConnection.start(
    { command: AGENT, args: ["--stdio"], env: fake.agentEnv(home), source: "bench" },
    {
      readTextFile: async () => ({ content: "" }),
      writeTextFile: async () => undefined,
      requestPermission: async () => ({ outcome: { outcome: "cancelled" } }),
      sessionUpdate: () => undefined,
      terminals: new Terminals({ opened() {}, output() {}, exited() {}, released() {} }),
      defaultCwd: () => cwd,
    },
    { cwd },
  );
}

function residentMb(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, "utf8").split("\n").find((entry) => entry.startsWith("VmRSS:"))!;
  return Number(line.replace(/\D+/g, "")) / 1024;
}

/** The thread, made through the agent alone; the agent's memory once it loaded it again. */
async function makeThread(fake: FakeModel, home: string, cwd: string): Promise<{ sessionId: string; agentMb: number }> {
  const agent = connect(fake, home, cwd);
  await agent.initialize();
  const { sessionId } = await agent.agent.request(acp.methods.agent.session.new, { cwd, mcpServers: [] });
  await fake.script(Array.from({ length: PROMPTS }, () => ({ text: ANSWER })));
  for (let turn = 0; turn < PROMPTS; turn++) {
    await agent.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: `Question ${turn + 1}: what is next?` }] });
  }
  await agent.stop();
  // A fresh agent that loads the thread: what the agent alone holds for it.
  const again = connect(fake, home, cwd);
  await again.initialize();
  await again.agent.request(acp.methods.agent.session.load, { sessionId, cwd, mcpServers: [] });
  const agentMb = residentMb(again.child.pid!);
  await again.stop();
  return { sessionId, agentMb };
}

/** The webview's JS heap (after a GC) and its DOM node count. */
async function viewMemory(page: Page, frame: Frame): Promise<{ heapMb: number; nodes: number; of: string }> {
  const nodes = await frame.evaluate(() => document.getElementsByTagName("*").length);
  let cdp;
  let of = "the webview's renderer";
  try {
    cdp = await page.context().newCDPSession(frame); // the webview runs in a process of its own
  } catch {
    cdp = await page.context().newCDPSession(page);
    of = "the whole page (the webview shares the workbench's renderer)";
  }
  await cdp.send("HeapProfiler.collectGarbage");
  const { usedSize } = (await cdp.send("Runtime.getHeapUsage")) as { usedSize: number };
  await cdp.detach();
  return { heapMb: usedSize / 1048576, nodes, of };
}

async function main(): Promise<void> {
  const f = await startFixture({ name: "bench-memory", files: { "app.py": "print('old')\n" } });
  try {
    await runCommand(f.page, "Hermes: Open chat");
    await f.chat.locator('#status[data-state="ready"]').waitFor();
    const frame = await chatFrameHandle(f.page);
    const empty = await viewMemory(f.page, frame);
    const { sessionId, agentMb } = await makeThread(f.fake, f.home, f.project);
    await f.chat.locator("#history").click();
    await f.chat.locator(`#sessions button.session[data-session-id="${sessionId}"]`).click();
    await f.chat.locator(".message.agent").nth(PROMPTS - 1).locator("pre code").waitFor();
    const messages = await frame.evaluate(() => document.querySelectorAll(".message.user, .message.agent").length);
    const full = await viewMemory(f.page, frame);
    await f.shot("500-messages");
    const result = {
      messages,
      heapOf: full.of,
      webviewHeapMb: { empty: +empty.heapMb.toFixed(1), thread: +full.heapMb.toFixed(1), added: +(full.heapMb - empty.heapMb).toFixed(1) },
      webviewDomNodes: { empty: empty.nodes, thread: full.nodes },
      agentResidentMb: +agentMb.toFixed(1),
      ratio: +(full.heapMb / agentMb).toFixed(2),
    };
    mkdirSync(OUTPUT, { recursive: true });
    writeFileSync(path.join(OUTPUT, "bench-memory.json"), JSON.stringify(result, null, 2));
    console.log(JSON.stringify(result, null, 2));
  } finally {
    await f.close();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
