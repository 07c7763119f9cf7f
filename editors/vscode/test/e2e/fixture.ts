/** One real VS Code (code-server) with the extension installed, a project, the scripted model. */
import { after, before, test as nodeTest } from "node:test";
import { appendFileSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import type { Browser, FrameLocator, Page } from "playwright-core";
import { startCodeServer, type CodeServer } from "./codeServer";
import { chatFrame, launchBrowser, openWorkbench, runCommand } from "./workbench";
import { AGENT, FakeModel, scratchDir } from "../support";

export const EXTENSION_ROOT = path.resolve(__dirname, "..", "..");
export const OUTPUT = process.env.HERMES_E2E_OUTPUT ?? path.join(EXTENSION_ROOT, "test-output");

export interface Fixture {
  fake: FakeModel;
  server: CodeServer;
  browser: Browser;
  page: Page;
  chat: FrameLocator;
  project: string;
  /** The agent's HOME (its store and config are under it). */
  home: string;
  /** The user's settings.json (VS Code watches it: a write is a settings change). */
  userSettings: string;
  setUserSettings(patch: Record<string, unknown>): void;
  /** Changes settings as a user does, in VS Code's settings.json editor (code-server does not
   * notice a write to the file from outside): the user's, or with `remote` the remote
   * machine's, where a code-server window keeps machine-scoped settings such as hermes.command. */
  editUserSettings(patch: Record<string, unknown>, remote?: boolean): Promise<void>;
  /** The pids of this window's running agents. */
  agentPids(): number[];
  shot(name: string): Promise<void>;
  close(): Promise<void>;
}

export interface FixtureOptions {
  /** Files of the project, by relative path (folders are made). */
  files: Record<string, string>;
  /** Leave workspace trust on (the folder opens in Restricted Mode). */
  trust?: boolean;
  /** Change the agent's environment (e.g. drop the API key). */
  env?: (env: Record<string, string>) => Record<string, string>;
  /** Screenshots go to test-output/<name>/. */
  name?: string;
}

export async function startFixture(opts: FixtureOptions): Promise<Fixture> {
  const binary = process.env.CODE_SERVER;
  if (!binary) throw new Error("CODE_SERVER must name the code-server binary (scripts/ci.sh sets it)");
  const vsix = process.env.HERMES_VSIX ?? path.join(EXTENSION_ROOT, "hermes-acp.vsix");
  const output = opts.name ? path.join(OUTPUT, opts.name) : OUTPUT;
  rmSync(output, { recursive: true, force: true });
  mkdirSync(output, { recursive: true });
  const log = path.join(output, "code-server.log");
  writeFileSync(log, "");
  const fake = await FakeModel.start();
  const root = scratchDir("e2e");
  const project = path.join(root, "project");
  const home = path.join(root, "home");
  mkdirSync(project);
  mkdirSync(home);
  for (const [name, text] of Object.entries(opts.files)) {
    mkdirSync(path.dirname(path.join(project, name)), { recursive: true });
    writeFileSync(path.join(project, name), text, { mode: name.includes("/bin/") || name.endsWith(".sh") ? 0o755 : 0o644 });
  }
  const env = fake.agentEnv(home);
  const settings: Record<string, unknown> = {
    "hermes.command": AGENT,
    "hermes.env": opts.env ? opts.env(env) : env,
    "workbench.startupEditor": "none",
    "workbench.tips.enabled": false,
    "files.autoSave": "off",
    "editor.minimap.enabled": false,
    "window.title": "${rootName}",
    "terminal.integrated.gpuAcceleration": "off",
  };
  if (opts.trust) {
    settings["security.workspace.trust.enabled"] = true;
    settings["security.workspace.trust.startupPrompt"] = "never";
    settings["security.workspace.trust.banner"] = "never";
    settings["security.workspace.trust.emptyWindow"] = false;
  }
  const server = await startCodeServer({
    binary,
    vsix,
    root,
    folder: project,
    settings,
    trust: opts.trust,
    log: (text) => appendFileSync(log, text),
  });
  const userSettings = path.join(root, "data", "User", "settings.json");
  // A code-server window is a remote one: machine-scoped settings live in the machine's file.
  const machineSettings = path.join(root, "data", "Machine", "settings.json");
  mkdirSync(path.dirname(machineSettings), { recursive: true });
  writeFileSync(machineSettings, JSON.stringify(Object.fromEntries(Object.entries(settings).filter(([key]) => key.startsWith("hermes."))), null, 2));
  const browser = await launchBrowser();
  let page: Page;
  try {
    page = await openWorkbench(browser, server.url, project);
  } catch (error) {
    // Nobody else holds these yet: a failed start must not leave a VS Code running.
    await browser.close();
    await server.stop();
    await fake.stop();
    throw error;
  }
  let count = 0;
  return {
    fake,
    server,
    browser,
    page,
    chat: chatFrame(page),
    project,
    home,
    userSettings,
    setUserSettings: (patch) => {
      const current = JSON.parse(readFileSync(userSettings, "utf8")) as Record<string, unknown>;
      writeFileSync(userSettings, JSON.stringify({ ...current, ...patch }, null, 2));
    },
    editUserSettings: async (patch, remote = false) => {
      const file = remote ? machineSettings : userSettings;
      const current = JSON.parse(readFileSync(file, "utf8")) as Record<string, unknown>;
      const wanted = { ...current, ...patch };
      await runCommand(page, remote ? "Preferences: Open Remote Settings (JSON)" : "Preferences: Open User Settings (JSON)");
      const tab = page.locator(".tab.active", { hasText: "settings.json" });
      await tab.waitFor();
      await page.locator(".editor-group-container.active .monaco-editor .view-lines").click();
      await page.keyboard.press("Control+A");
      // One line, then whatever the editor auto-closed after the cursor goes.
      await page.keyboard.insertText(JSON.stringify(wanted));
      await page.keyboard.press("Shift+Control+End");
      await page.keyboard.press("Delete");
      await page.keyboard.press("Control+S");
      await page.locator(".tab.active:not(.dirty)", { hasText: "settings.json" }).waitFor();
      const saved = JSON.parse(readFileSync(file, "utf8")) as Record<string, unknown>;
      if (JSON.stringify(saved) !== JSON.stringify(wanted)) throw new Error(`settings.json did not save as typed: ${JSON.stringify(saved)}`);
      // The tab stays open (closing it by key was flaky under load); the next edit reuses it.
    },
    agentPids: () => agentPids(path.join(home, ".hermes-acp")),
    shot: async (name) => {
      count += 1;
      await page.screenshot({ path: path.join(output, `${String(count).padStart(2, "0")}-${name}.png`) });
    },
    close: async () => {
      await browser.close();
      await server.stop();
      await fake.stop();
    },
  };
}

/** What a test file does with its one window: its tests, and the two steps every test repeats. */
export interface Suite {
  /** A test that leaves a screenshot of the window when it fails. */
  test(name: string, body: () => Promise<void>): void;
  /** Types a prompt into the chat view and sends it. */
  send(text: string): Promise<void>;
  /** Until the view says the agent is ready for the next prompt. */
  waitReady(): Promise<void>;
}

/**
 * Starts one window for the test file before its first test and closes it after the last;
 * `started` hands the fixture to the file (and may prepare the project further).
 */
export function useFixture(options: FixtureOptions, started: (fixture: Fixture) => void): Suite {
  let f: Fixture | undefined;
  const running = (): Fixture => {
    if (!f) throw new Error("the fixture did not start");
    return f;
  };
  before(async () => {
    f = await startFixture(options);
    started(f);
  });
  after(async () => {
    await f?.close();
  });
  return {
    test: (name, body) => {
      nodeTest(name, async () => {
        try {
          await body();
        } catch (error) {
          await f?.shot(`FAILED-${name.split(":")[0]!.replace(/\W+/g, "-")}`).catch(() => undefined);
          throw error;
        }
      });
    },
    send: async (text) => {
      await running().chat.locator("#input").fill(text);
      await running().chat.locator("#input").press("Enter");
    },
    waitReady: async () => {
      await running().chat.locator('#status[data-state="ready"]').waitFor();
    },
  };
}

/** Running `hermes-acp --stdio` processes whose HERMES_ACP_HOME is `agentHome`, from /proc. */
export function agentPids(agentHome: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const argv = readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0");
      if (!argv.some((arg) => arg.endsWith("hermes-acp")) || !argv.includes("--stdio")) continue;
      const environ = readFileSync(`/proc/${entry}/environ`, "utf8").split("\0");
      if (environ.includes(`HERMES_ACP_HOME=${agentHome}`)) pids.push(Number(entry));
    } catch {
      // it exited while we looked
    }
  }
  return pids;
}
