/**
 * The extension inside a real VS Code (code-server 4.100.3) driven through Debian's chromium:
 * each test does what a user does and checks what they would see. The steps share one
 * window, in order, like a user's afternoon. Screenshots land in test-output/.
 */
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { useFixture, type Fixture } from "./fixture";
import { chatFrameHandle, editorText, openFile, runCommand, widenSidebar } from "./workbench";
import { AGENT } from "../support";

let f: Fixture;
/** The past session the user opened, which a window reload must bring back. */
let loadedSession = "";

/** What a hostile repository plants: its own agent command and environment for the agent. */
const PLANTED_AGENT = `#!/bin/sh\ntouch "$(dirname "$0")/PWNED"\nexec ${JSON.stringify(AGENT)} "$@"\n`;
const PLANTED_SETTINGS = JSON.stringify({ "hermes.command": "./evil.sh", "hermes.env": { HERMES_ACP_MODEL: "workspace-chosen-model" } });

const { test, send, waitReady } = useFixture(
  {
    files: {
      "app.py": "print('old')\n",
      "README.md": "# Demo\n",
      "evil.sh": PLANTED_AGENT,
      ".vscode/settings.json": PLANTED_SETTINGS,
    },
  },
  (started) => {
    f = started;
    // A relative hermes.command resolves against the window's cwd, not the project: name it fully.
    writeFileSync(path.join(f.project, ".vscode", "settings.json"), PLANTED_SETTINGS.replace("./evil.sh", path.join(f.project, "evil.sh")));
  },
);

test("open the view: the agent starts and the pickers show its modes and models", async () => {
  await runCommand(f.page, "Hermes: Open chat");
  await waitReady();
  await widenSidebar(f.page, 480);
  const mode = f.chat.locator('select[data-config-id="mode"]');
  await mode.locator('option[value="yolo"]').waitFor({ state: "attached" });
  assert.deepEqual(await mode.locator("option").allInnerTexts(), ["Ask", "Accept edits", "Plan", "Auto", "Yolo"]);
  assert.equal(await mode.inputValue(), "ask");
  await f.page.locator(".statusbar-item", { hasText: "Hermes · ask" }).waitFor();
  await f.shot("view-open");
});

test("a workspace's .vscode/settings.json cannot choose the agent's command or environment", async () => {
  // The agent is ready (above), so whatever would run the planted command has run by now.
  assert.equal(existsSync(path.join(f.project, "PWNED")), false, "the workspace's hermes.command ran");
  assert.equal(f.agentPids().length, 1);
  const environ = readFileSync(`/proc/${f.agentPids()[0]}/environ`, "utf8").split("\0");
  assert.ok(environ.includes("HERMES_ACP_MODEL=gpt-4.1"), "the user's hermes.env applies");
  assert.ok(!environ.includes("HERMES_ACP_MODEL=workspace-chosen-model"), "the workspace's hermes.env was applied");
});

test("send a prompt: the answer streams in as rendered Markdown with a copyable code block", async () => {
  await f.fake.script([
    {
      text: "Here is the plan:\n\n1. Read `app.py`\n2. Change **old** to **new**\n\n```python\nprint('new')\n```\n\nThat is all; it streams in small pieces so you can watch it arrive.",
      chunk_size: 3,
      chunk_delay: 0.04,
      reasoning: "The user wants a greeting.",
    },
  ]);
  await send("What would you change in app.py?");
  const answer = f.chat.locator(".message.agent").last();
  await answer.getByText("Here is the plan").waitFor();
  await f.chat.locator('#status[data-state="busy"]').waitFor();
  await f.shot("mid-turn");
  await waitReady();
  await answer.locator("pre button.copy").waitFor();
  assert.equal(await answer.locator("strong").first().innerText(), "old");
  assert.match(await answer.locator("pre code").innerText(), /print\('new'\)/);
  assert.equal(await f.chat.locator("details.thought").count(), 1, "the reasoning sits in a collapsible thought");
  // A file named in inline code is a link that opens it in the editor.
  await answer.locator("a.file-reference", { hasText: "app.py" }).click();
  await f.page.locator(".tab.active", { hasText: "app.py" }).waitFor();
});

test("approve an edit after reviewing its diff: the buffer changes and Undo takes it back", async () => {
  await openFile(f.page, "app.py");
  await f.fake.script([
    { tool_calls: [{ name: "patch", arguments: { path: "app.py", old_text: "old", new_text: "new" } }] },
    { tool_calls: [{ name: "terminal", arguments: { command: "cat app.py" } }] },
    { text: "Patched app.py." },
  ]);
  await send("Change old to new in app.py and check it from the shell");
  const card = f.chat.locator(".permission:not(.settled)");
  await card.locator("button.review").waitFor();
  await f.shot("permission-card");
  await card.locator("button.review").click();
  const diff = f.page.locator(".monaco-diff-editor");
  await diff.waitFor();
  await f.page.locator(".tab.active", { hasText: "proposed by Hermes" }).waitFor();
  await diff.locator(".modified-in-monaco-diff-editor .view-line", { hasText: "print('new')" }).waitFor();
  await diff.locator(".original-in-monaco-diff-editor .view-line", { hasText: "print('old')" }).waitFor();
  await f.shot("diff-review");
  await card.locator('button[data-option-id="allow_once"]').click();
  // The command the agent runs next reads the file from disk: it must see the edit.
  await f.chat.locator(".permission:not(.settled)").locator('button[data-option-id="allow_once"]').click();
  await f.chat.getByText("Patched app.py.").waitFor();
  await waitReady();
  assert.match(await f.chat.locator("pre.terminal").last().innerText(), /print\('new'\)/, "the shell saw the old file");
  assert.doesNotMatch(await f.chat.locator("pre.terminal").last().innerText(), /print\('old'\)/);
  assert.equal(readFileSync(path.join(f.project, "app.py"), "utf8"), "print('new')\n");
  // The edit's card counts lines changed, not lines before and after.
  const counts = f.chat.locator('details.tool[data-status="completed"] .diff').last();
  assert.equal(await counts.locator(".added").innerText(), "+1");
  assert.equal(await counts.locator(".removed").innerText(), "−1");
  await f.page.locator(".tab", { hasText: "app.py" }).first().click();
  await f.page.locator(".tab.active:not(.dirty)", { hasText: "app.py" }).waitFor(); // saved
  assert.equal(await editorText(f.page), "print('new')\n");
  await f.shot("edit-applied");
  await f.page.locator(".editor-group-container.active .monaco-editor .view-lines").click();
  await f.page.keyboard.press("Control+Z");
  await f.page.locator(".editor-group-container.active .view-line", { hasText: "print('old')" }).waitFor();
  assert.equal(await editorText(f.page), "print('old')\n");
  await f.page.locator(".tab.active.dirty", { hasText: "app.py" }).waitFor(); // Undo is the user's, unsaved
});

test("an edit of a file with unsaved changes starts from the unsaved text", async () => {
  const editor = f.page.locator(".editor-group-container.active .monaco-editor .view-lines");
  await editor.click();
  await f.page.keyboard.press("Control+End");
  await f.page.keyboard.type("# draft line");
  await f.page.locator(".editor-group-container.active .view-line", { hasText: "# draft line" }).waitFor();
  assert.doesNotMatch(readFileSync(path.join(f.project, "app.py"), "utf8"), /draft/);
  await f.fake.script([
    { tool_calls: [{ name: "patch", arguments: { path: "app.py", old_text: "# draft line", new_text: "# reviewed line" } }] },
    { text: "Updated your draft." },
  ]);
  await send("Rename the draft line");
  const card = f.chat.locator(".permission:not(.settled)");
  await card.locator('button[data-option-id="allow_once"]').click();
  await f.chat.getByText("Updated your draft.").waitFor();
  await f.page.locator(".editor-group-container.active .view-line", { hasText: "# reviewed line" }).waitFor();
  assert.equal(await editorText(f.page), "print('old')\n# reviewed line");
  assert.equal(readFileSync(path.join(f.project, "app.py"), "utf8"), "print('old')\n# reviewed line");
  const status = await f.chat.locator("details.tool").last().getAttribute("data-status");
  assert.equal(status, "completed");
});

test("a command's output streams into its tool card while it runs", async () => {
  const go = path.join(f.project, "go");
  await f.fake.script([
    { tool_calls: [{ name: "terminal", arguments: { command: "echo line-1; while [ ! -e go ]; do sleep 0.05; done; echo line-2" } }] },
    { text: "The command finished." },
  ]);
  await send("Run the two-step command");
  await f.chat.locator(".permission:not(.settled)").locator('button[data-option-id="allow_once"]').click();
  const terminal = f.chat.locator("pre.terminal").last();
  await terminal.getByText("line-1").waitFor();
  assert.doesNotMatch(await terminal.innerText(), /line-2/, "line-2 cannot exist before the file does");
  await f.shot("command-streaming");
  writeFileSync(go, "");
  await terminal.getByText("line-2").waitFor();
  await f.chat.getByText("The command finished.").waitFor();
  assert.match(await terminal.innerText(), /line-1\nline-2\n[\s\S]*exit 0/);
  await waitReady();
  // VS Code's terminal panel: one "Hermes" terminal, shown, headed by the command as written
  // (not the sandbox launcher), its first line and its exit line there.
  const rows = f.page.locator(".terminal-wrapper.active .xterm-rows");
  await rows.getByText("[exit 0]").nth(1).waitFor(); // `cat app.py` earlier ran in the same terminal
  const shown = (await rows.innerText()).replace(/\u00a0/g, " ");
  assert.match(shown, /^\$ echo line-1; while/m);
  assert.doesNotMatch(shown, /bwrap|--ro-bind/);
  assert.match(shown, /^line-1$/m);
  assert.match(shown, /^line-2$/m);
  await f.page.locator(".pane-header, .composite.title, .panel", { hasText: "Hermes" }).first().waitFor();
  await f.shot("terminal-panel");
});

test("while a turn streams: scrolling up stays put, Jump to latest goes down, /steer can be sent, Stop cancels", async () => {
  await f.fake.script([{ text: "word ".repeat(2000), chunk_size: 5, chunk_delay: 0.05 }]);
  await send("Talk for a long time");
  const answer = f.chat.locator(".message.agent").last();
  await answer.getByText("word").first().waitFor();
  const frame = await chatFrameHandle(f.page);
  // Enough text that the thread scrolls, then the user scrolls up.
  await frame.waitForFunction(() => {
    const thread = document.getElementById("thread")!;
    return thread.scrollHeight > thread.clientHeight + 300;
  });
  await f.chat.locator("#thread").hover();
  await f.page.mouse.wheel(0, -2000);
  await frame.waitForFunction(() => document.getElementById("thread")!.scrollTop < 50);
  const length = (await answer.innerText()).length;
  await frame.waitForFunction((before) => (Array.from(document.querySelectorAll(".message.agent")).at(-1)?.textContent ?? "").length > before + 200, length);
  assert.ok(await frame.evaluate(() => document.getElementById("thread")!.scrollTop < 50), "the view jumped back to the bottom");
  await f.chat.locator("#jump:not([hidden])").waitFor();
  await f.shot("scrolled-up-while-streaming");
  await f.chat.locator("#jump").click();
  await frame.waitForFunction(() => {
    const thread = document.getElementById("thread")!;
    return thread.scrollHeight - thread.scrollTop - thread.clientHeight < 30;
  });
  assert.equal(await f.chat.locator("#jump").isHidden(), true);
  // Send stays enabled: /steer reaches the running turn.
  assert.equal(await f.chat.locator("#send").isEnabled(), true);
  await send("/steer keep it short");
  await f.chat.getByText("Added to the running turn").waitFor();
  await f.chat.locator('#status[data-state="busy"]').waitFor();
  await f.chat.locator("#stop:not([disabled])").waitFor();
  await f.chat.locator("#input").press("Escape"); // Esc in the input stops the turn
  await f.chat.getByText("Stopped.").waitFor();
  await waitReady();
  const said = await f.chat.locator(".message.agent").last().innerText();
  assert.ok(said.length < 10_000, "the answer stopped before its end");
  // Up in the empty input recalls the prompts sent, newest first; Down goes back.
  await f.chat.locator("#input").press("ArrowUp");
  assert.equal(await f.chat.locator("#input").inputValue(), "/steer keep it short");
  await f.chat.locator("#input").press("ArrowUp");
  assert.equal(await f.chat.locator("#input").inputValue(), "Talk for a long time");
  await f.chat.locator("#input").press("ArrowDown");
  await f.chat.locator("#input").press("ArrowDown");
  assert.equal(await f.chat.locator("#input").inputValue(), "");
});

test("an approval asked while the view is hidden: a badge and a notification that answers it", async () => {
  await f.fake.script([
    { tool_calls: [{ name: "terminal", arguments: { command: "echo approved-from-notification" } }] },
    { text: "Ran it." },
  ]);
  await send("Run the echo");
  await f.chat.locator(".permission:not(.settled)").waitFor();
  await f.shot("command-permission-card"); // the command shown whole, escaped, under its title
  await f.page.keyboard.press("Control+Shift+E"); // the Explorer takes the sidebar: the chat is hidden
  await f.page.locator(".explorer-folders-view, .explorer-viewlet").first().waitFor();
  const badge = f.page.locator('.activitybar .action-item:has(.action-label[aria-label^="Hermes"]) .badge-content');
  await badge.filter({ hasText: "1" }).waitFor();
  const toast = f.page.locator(".notification-toast", { hasText: "Hermes asks" });
  await toast.waitFor();
  await f.shot("approval-while-hidden");
  await toast.getByRole("button", { name: "Allow" }).click();
  await badge.waitFor({ state: "hidden" });
  await runCommand(f.page, "Hermes: Open chat");
  await f.chat.getByText("Ran it.").waitFor();
  assert.match(await f.chat.locator("pre.terminal").last().innerText(), /approved-from-notification/);
  await waitReady();
});

test("switch mode: the picker sets it on the agent and the status bar shows it", async () => {
  await f.chat.locator('select[data-config-id="mode"]').selectOption("plan");
  await f.page.locator(".statusbar-item", { hasText: "Hermes · plan" }).waitFor();
  assert.equal(await f.chat.locator('select[data-config-id="mode"]').inputValue(), "plan");
});

test("slash commands complete from the agent's list; @file and the selection reach the model", async () => {
  const input = f.chat.locator("#input");
  await input.fill("");
  await input.pressSequentially("/he");
  await f.chat.locator("#completions li", { hasText: "/help" }).waitFor();
  await input.press("Tab");
  assert.equal(await input.inputValue(), "/help ");
  await input.fill("");

  // The selection: line 2 of the open buffer, attached as an embedded resource.
  await f.page.locator(".editor-group-container.active .view-line", { hasText: "# reviewed line" }).click();
  await f.page.keyboard.press("Home");
  await f.page.keyboard.press("Shift+End");
  await runCommand(f.page, "Hermes: Send selection to Hermes");
  await f.chat.locator("#attachments .chip", { hasText: "app.py:2-2" }).waitFor();

  await input.pressSequentially("Explain @app");
  await f.chat.locator("#completions li", { hasText: "@app.py" }).waitFor();
  await f.shot("completions");
  await input.press("Enter"); // picks the completion
  assert.equal(await input.inputValue(), "Explain @app.py ");
  await f.fake.script([{ text: "It prints." }]);
  await input.press("Enter");
  await f.chat.getByText("It prints.").waitFor();
  const { last } = await f.fake.requests();
  const messages = (last as { messages: Array<{ role: string }> }).messages;
  const prompt = JSON.stringify(messages.filter((message) => message.role === "user").at(-1));
  // The link was read through the editor (so from its unsaved buffer: "# reviewed line" is not
  // on disk), and the selection went along as well: that line twice.
  assert.match(prompt, /print\('old'\)/);
  assert.equal(prompt.split("# reviewed line").length - 1, 2, prompt);
  // Attachments go with one prompt; only the active editor's chip stays offered.
  assert.equal(await f.chat.locator("#attachments .chip:not(.current)").count(), 0, "attachments go with one prompt");
  await waitReady();
});

test("an endpoint that is down: the retries show, then one error with Retry, which resends", async () => {
  await f.fake.script(Array.from({ length: 4 }, () => ({ status: 503, error_kind: "server", error_message: "upstream is down" })));
  await send("Are you there?");
  const error = f.chat.locator(".error", { hasText: "model provider failed" });
  await error.waitFor();
  // The "retrying (n of 3)" notices are lines in the thread, not inside a collapsed thought.
  assert.ok((await f.chat.locator(".notice.status-line", { hasText: "retrying" }).count()) >= 1);
  assert.equal(await f.chat.locator("details.thought", { hasText: "retrying" }).count(), 0);
  assert.equal(await f.chat.locator(".message.agent", { hasText: "model provider failed" }).count(), 0, "an error is not an answer");
  await f.shot("endpoint-down");
  await waitReady();
  await f.fake.script([{ text: "Back online." }]);
  await error.locator('button[data-action="retry"]').click();
  await f.chat.locator(".message.agent", { hasText: "Back online." }).waitFor();
  await waitReady();
});

test("after the agent crashes it restarts and the same conversation continues", async () => {
  const [before] = f.agentPids();
  assert.ok(before);
  process.kill(before, "SIGKILL");
  await f.chat.locator(".notice", { hasText: "The agent restarted" }).waitFor();
  await waitReady();
  const [after] = f.agentPids();
  assert.ok(after && after !== before);
  await f.fake.script([{ text: "I remember." }]);
  await send("What did I ask you to run before?");
  await f.chat.getByText("I remember.").waitFor();
  const { last } = await f.fake.requests();
  assert.match(JSON.stringify(last), /Run the echo/, "the model got the conversation so far");
  await waitReady();
});

test("a bad hermes.command: one error naming the cause, the typed prompt kept; fixing it restarts the agent", async () => {
  await f.editUserSettings({ "hermes.command": "/nonexistent/hermes-acp" }, true);
  const error = f.chat.locator(".error", { hasText: "ENOENT" });
  await error.waitFor();
  assert.match(await error.innerText(), /\/nonexistent\/hermes-acp/);
  await f.chat.locator('#status[data-state="error"]').waitFor();
  await send("Is this prompt lost?");
  const frame = await chatFrameHandle(f.page);
  await frame.waitForFunction(() => (document.getElementById("input") as HTMLTextAreaElement).value === "Is this prompt lost?");
  assert.equal(await f.chat.locator(".error").filter({ hasText: "ENOENT" }).count(), 1, "the cause is said once");
  assert.equal(await f.chat.locator(".error", { hasText: "connection closed" }).count(), 0);
  await f.shot("bad-command");
  await f.editUserSettings({ "hermes.command": AGENT }, true);
  await f.chat.locator(".notice", { hasText: "Restarted the agent" }).waitFor();
  await waitReady();
});

test("load a past session: it is listed and its thread replays into the view", async () => {
  // New and History are icons in the view's title bar; a new session shows example prompts.
  await f.page.locator('.part.sidebar .action-label[aria-label^="Open a past session"]:visible').first().waitFor();
  await f.page.locator('.part.sidebar .action-label[aria-label^="New session"]:visible').first().click();
  await f.chat.locator(".message").first().waitFor({ state: "detached" });
  const example = f.chat.locator(".empty-state button.example").first();
  await example.click();
  assert.equal(await f.chat.locator("#input").inputValue(), await example.innerText());
  await f.shot("empty-state");
  await f.chat.locator("#input").fill("");
  await f.chat.locator("#history").click();
  const entries = f.chat.locator("#sessions button.session");
  await entries.first().waitFor();
  // The new session has no turn yet, so only the earlier one is worth listing.
  assert.deepEqual(await entries.locator(".title").allInnerTexts(), ["What would you change in app.py?"]);
  await f.shot("history");
  const entry = entries.filter({ hasText: "What would you change" }).first();
  loadedSession = (await entry.getAttribute("data-session-id"))!;
  await entry.click();
  await f.chat.locator(".message.user", { hasText: "What would you change in app.py?" }).waitFor();
  await f.chat.locator(".message.agent", { hasText: "Here is the plan" }).waitFor();
  await f.chat.locator(".message.user", { hasText: "Run the two-step command" }).waitFor();
  // A prompt that carried files replays as the live one showed it: names, not the files' text.
  const mentioned = f.chat.locator(".message.user", { hasText: "Explain @app.py" });
  await mentioned.waitFor();
  assert.doesNotMatch(await mentioned.innerText(), /<file|print\('old'\)/);
  assert.deepEqual(await mentioned.locator(".chip.attached").allInnerTexts(), ["app.py", "app.py:2-2"]);
  // The replay comes before session/load's answer; the view learns the session id only once
  // the extension has stored it for the next window.
  await f.chat.locator(`body[data-session-id="${loadedSession}"]`).waitFor({ state: "attached" });
  await f.shot("session-loaded");
  assert.ok(existsSync(path.join(f.project, "go")));
});

test("after a window reload the chat comes back with the session it showed", async () => {
  await f.page.reload();
  await f.page.locator(".statusbar-item", { hasText: "Hermes" }).first().waitFor();
  await f.chat.locator(`body[data-session-id="${loadedSession}"]`).waitFor({ state: "attached" });
  await f.chat.locator(".message.user", { hasText: "What would you change in app.py?" }).waitFor();
  await f.chat.locator(".message.agent", { hasText: "Here is the plan" }).waitFor();
  await waitReady();
  // The replayed cards show paths relative to the project, as the live ones did.
  await f.chat.locator("a.location", { hasText: /^app\.py$/ }).first().waitFor();
  assert.equal(await f.chat.locator("a.location", { hasText: f.project }).count(), 0);
  await f.shot("after-reload");
  // The extension host that the reload ended logged no write of ours to a closed channel.
  const logs = path.join(path.dirname(f.userSettings), "..", "logs");
  const ours = readdirSync(logs, { recursive: true, encoding: "utf8" })
    .filter((file) => file.endsWith("remoteexthost.log"))
    .flatMap((file) => readFileSync(path.join(logs, file), "utf8").split(/\n(?=\d{4}-\d\d-\d\d )/))
    .filter((entry) => entry.includes("Channel has been closed") && entry.includes("hermes-acp.hermes-acp"));
  assert.deepEqual(ours, []);
});

const THEMES = [
  { theme: "Default Dark Modern", body: "vscode-dark" },
  { theme: "Default Light Modern", body: "vscode-light" },
  { theme: "Default High Contrast", body: "vscode-high-contrast" },
  { theme: "Default High Contrast Light", body: "vscode-high-contrast-light" },
];

test("accessibility: axe-core finds no serious or critical violation in the view, in dark, light and high-contrast themes", async () => {
  const axeSource = readFileSync(require.resolve("axe-core/axe.min.js"), "utf8");
  // Something of each kind on screen: a past thread (messages, cards, answers), an error, a notice.
  await f.chat.locator(".message.agent").first().waitFor();
  for (const { theme, body } of THEMES) {
    await f.editUserSettings({ "workbench.colorTheme": theme });
    const frame = await chatFrameHandle(f.page);
    await frame.waitForFunction((name) => document.body.classList.contains(name), body);
    await frame.evaluate(axeSource);
    const result = (await frame.evaluate(() =>
      (window as unknown as { axe: { run(context: Document, options: object): Promise<unknown> } }).axe.run(document, { resultTypes: ["violations"] }),
    )) as { violations: Array<{ id: string; impact: string | null; nodes: Array<{ target: unknown[]; failureSummary?: string }> }> };
    const serious = result.violations.filter((violation) => violation.impact === "serious" || violation.impact === "critical");
    await f.shot(`a11y-${body}`);
    assert.deepEqual(
      serious.map((violation) => `${violation.id}: ${violation.nodes.map((node) => `${JSON.stringify(node.target)} ${node.failureSummary ?? ""}`).join("; ")}`),
      [],
      theme,
    );
  }
});
