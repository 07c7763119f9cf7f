/** One real VS Code (code-server) with the extension installed, a project, the scripted model. */
import { appendFileSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import type { Browser, FrameLocator, Page } from "playwright-core";
import { startCodeServer, type CodeServer } from "./codeServer";
import { chatFrame, launchBrowser, openWorkbench } from "./workbench";
import { AGENT, FakeModel, scratchDir } from "../support";

export const EXTENSION_ROOT = path.resolve(__dirname, "..", "..");
export const OUTPUT = path.join(EXTENSION_ROOT, "test-output");

export interface Fixture {
  fake: FakeModel;
  server: CodeServer;
  browser: Browser;
  page: Page;
  chat: FrameLocator;
  project: string;
  shot(name: string): Promise<void>;
  close(): Promise<void>;
}

export async function startFixture(files: Record<string, string>): Promise<Fixture> {
  const binary = process.env.CODE_SERVER;
  if (!binary) throw new Error("CODE_SERVER must name the code-server binary (scripts/ci.sh sets it)");
  const vsix = process.env.HERMES_VSIX ?? path.join(EXTENSION_ROOT, "hermes-acp.vsix");
  rmSync(OUTPUT, { recursive: true, force: true });
  mkdirSync(OUTPUT, { recursive: true });
  const log = path.join(OUTPUT, "code-server.log");
  writeFileSync(log, "");
  const fake = await FakeModel.start();
  const root = scratchDir("e2e");
  const project = path.join(root, "project");
  const home = path.join(root, "home");
  mkdirSync(project);
  mkdirSync(home);
  for (const [name, text] of Object.entries(files)) writeFileSync(path.join(project, name), text);
  const server = await startCodeServer({
    binary,
    vsix,
    root,
    folder: project,
    settings: {
      "hermes.command": AGENT,
      "hermes.env": fake.agentEnv(home),
      "workbench.startupEditor": "none",
      "workbench.tips.enabled": false,
      "files.autoSave": "off",
      "editor.minimap.enabled": false,
      "window.title": "${rootName}",
    },
    log: (text) => appendFileSync(log, text),
  });
  const browser = await launchBrowser();
  const page = await openWorkbench(browser, server.url, project);
  let count = 0;
  return {
    fake,
    server,
    browser,
    page,
    chat: chatFrame(page),
    project,
    shot: async (name) => {
      count += 1;
      await page.screenshot({ path: path.join(OUTPUT, `${String(count).padStart(2, "0")}-${name}.png`) });
    },
    close: async () => {
      await browser.close();
      await server.stop();
      await fake.stop();
    },
  };
}
