/**
 * What a user waits for, measured in a real VS Code, beside the agent's own figures from
 * the same run (a bare ACP client on the agent's pipes, no editor in between):
 *   open the view -> the agent's initialize answer is in the view   vs  spawn -> initialize
 *   Enter -> first streamed character in the view                    vs  session/prompt -> first chunk
 * Medians of RUNS rounds, each in a fresh code-server window. Writes test-output/bench.json.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import * as acp from "@agentclientprotocol/sdk";
import { AgentConnection } from "../../src/agentConnection";
import { Terminals } from "../../src/terminals";
import { AGENT, FakeModel, scratchDir } from "../support";
import { OUTPUT, startFixture } from "./fixture";
import { chatFrameHandle } from "./workbench";

const RUNS = Number(process.env.RUNS ?? 5);

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

/** The agent alone: spawn to initialize, prompt to first chunk, through the same SDK. */
async function agentFigures(fake: FakeModel): Promise<{ initialize: number[]; firstChunk: number[]; warmChunk: number[] }> {
  const initialize: number[] = [];
  const firstChunk: number[] = [];
  const warmChunk: number[] = [];
  for (let run = 0; run < RUNS; run++) {
    const home = scratchDir("bench-home");
    let firstAt = 0;
    let resolveFirst: () => void = () => undefined;
    const started = performance.now();
    const agent = AgentConnection.start(
      { command: AGENT, args: ["--stdio"], env: fake.agentEnv(home), source: "bench" },
      {
        readTextFile: async () => ({ content: "" }),
        writeTextFile: async () => undefined,
        requestPermission: async () => ({ outcome: { outcome: "cancelled" } }),
        sessionUpdate: (notification) => {
          if (!firstAt && notification.update.sessionUpdate === "agent_message_chunk") {
            firstAt = performance.now();
            resolveFirst();
          }
        },
        terminals: new Terminals({ opened() {}, output() {}, exited() {}, released() {} }),
        defaultCwd: () => home,
      },
      { cwd: home },
    );
    await agent.initialize();
    initialize.push(performance.now() - started);
    const session = await agent.agent.request(acp.methods.agent.session.new, { cwd: home, mcpServers: [] });
    for (const figures of [firstChunk, warmChunk]) {
      firstAt = 0;
      const first = new Promise<void>((resolve) => (resolveFirst = resolve));
      await fake.script([{ text: "Hello from the agent." }]);
      const sent = performance.now();
      const turn = agent.agent.request(acp.methods.agent.session.prompt, { sessionId: session.sessionId, prompt: [{ type: "text", text: "hi" }] });
      await first;
      figures.push(firstAt - sent);
      await turn;
    }
    await agent.stop();
  }
  return { initialize, firstChunk, warmChunk };
}

/** One fresh VS Code window per round: the first opening of the view is what is measured. */
async function viewRound(): Promise<{ open: number; firstChar: number; warmChar: number }> {
  const f = await startFixture({ files: { "app.py": "print('old')\n" } });
  try {
    const icon = f.page.locator('.activitybar .action-item a[aria-label^="Hermes"]');
    await icon.waitFor();
    const clicked = Date.now();
    await icon.click();
    await f.chat.locator('#status[data-state="ready"]').waitFor();
    const open = Date.now() - clicked;
    await f.chat.locator("body[data-session-id]").waitFor();
    const frame = await chatFrameHandle(f.page);
    const firstChars: number[] = [];
    for (let turn = 0; turn < 2; turn++) {
      await f.fake.script([{ text: "Hello from the agent." }]);
      await frame.evaluate((answersBefore) => {
        const marks = window as unknown as { enterAt?: number; firstAt?: number };
        marks.enterAt = undefined;
        marks.firstAt = undefined;
        const input = document.getElementById("input")!;
        input.addEventListener("keydown", (event) => {
          if ((event as KeyboardEvent).key === "Enter") marks.enterAt = performance.now();
        }, { capture: true, once: true });
        const thread = document.getElementById("thread")!;
        new MutationObserver((_, observer) => {
          const answer = thread.querySelectorAll(".message.agent")[answersBefore];
          if (answer && (answer.textContent ?? "").length > 0) {
            marks.firstAt = performance.now();
            observer.disconnect();
          }
        }).observe(thread, { childList: true, subtree: true, characterData: true });
      }, turn);
      await f.chat.locator("#input").fill("hi");
      await f.chat.locator("#input").press("Enter");
      await frame.waitForFunction(() => (window as unknown as { firstAt?: number }).firstAt !== undefined);
      firstChars.push(await frame.evaluate(() => {
        const marks = window as unknown as { enterAt: number; firstAt: number };
        return marks.firstAt - marks.enterAt;
      }));
      await f.chat.locator('#status[data-state="ready"]').waitFor();
    }
    return { open, firstChar: firstChars[0]!, warmChar: firstChars[1]! };
  } catch (error) {
    await f.shot("bench-FAILED");
    throw error;
  } finally {
    await f.close();
  }
}

async function main(): Promise<void> {
  const fake = await FakeModel.start();
  const agent = await agentFigures(fake).finally(() => fake.stop());
  const rounds = [];
  for (let run = 0; run < RUNS; run++) rounds.push(await viewRound());
  const viewOpen = rounds.map((round) => round.open);
  const viewFirstChar = rounds.map((round) => round.firstChar);
  const viewWarmChar = rounds.map((round) => round.warmChar);
  const result = {
    runs: RUNS,
    openViewToInitializeMs: { view: median(viewOpen), agent: median(agent.initialize), view_all: viewOpen, agent_all: agent.initialize },
    enterToFirstCharacterMs: { view: median(viewFirstChar), agent: median(agent.firstChunk), view_all: viewFirstChar, agent_all: agent.firstChunk },
    secondPromptEnterToFirstCharacterMs: { view: median(viewWarmChar), agent: median(agent.warmChunk), view_all: viewWarmChar, agent_all: agent.warmChunk },
  };
  mkdirSync(OUTPUT, { recursive: true });
  writeFileSync(path.join(OUTPUT, "bench.json"), JSON.stringify(result, null, 2));
  const row = (name: string, view: number, own: number): string => `| ${name} | ${view.toFixed(0)} ms | ${own.toFixed(0)} ms |`;
  console.log(`| median of ${RUNS} | in VS Code's view | the agent alone |`);
  console.log("| --- | --- | --- |");
  console.log(row("open the view → initialize answered", result.openViewToInitializeMs.view, result.openViewToInitializeMs.agent));
  console.log(row("Enter → first streamed character (first prompt)", result.enterToFirstCharacterMs.view, result.enterToFirstCharacterMs.agent));
  console.log(row("Enter → first streamed character (next prompts)", result.secondPromptEnterToFirstCharacterMs.view, result.secondPromptEnterToFirstCharacterMs.agent));
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
