/**
 * The extension inside a real VS Code (code-server 4.100.3) driven through Debian's chromium:
 * each test does what a user does and checks what they would see. The steps share one
 * window, in order, like a user's afternoon. Screenshots land in test-output/.
 */
import assert from "node:assert/strict";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { after, before, test as nodeTest } from "node:test";
import { startFixture, type Fixture } from "./fixture";
import { editorText, openFile, runCommand, widenSidebar } from "./workbench";

let f: Fixture;
/** The past session the user opened, which a window reload must bring back. */
let loadedSession = "";

/** A test that leaves a screenshot of the window when it fails. */
function test(name: string, body: () => Promise<void>): void {
  nodeTest(name, async () => {
    try {
      await body();
    } catch (error) {
      await f.shot(`FAILED-${name.split(":")[0]!.replace(/\W+/g, "-")}`).catch(() => undefined);
      throw error;
    }
  });
}

before(async () => {
  f = await startFixture({ "app.py": "print('old')\n", "README.md": "# Demo\n" });
});

after(async () => {
  await f?.close();
});

async function send(text: string): Promise<void> {
  await f.chat.locator("#input").fill(text);
  await f.chat.locator("#input").press("Enter");
}

async function waitReady(): Promise<void> {
  await f.chat.locator('#status[data-state="ready"]').waitFor();
}

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
});

test("approve an edit after reviewing its diff: the buffer changes and Undo takes it back", async () => {
  await openFile(f.page, "app.py");
  await f.fake.script([
    { tool_calls: [{ name: "patch", arguments: { path: "app.py", old_text: "old", new_text: "new" } }] },
    { text: "Patched app.py." },
  ]);
  await send("Change old to new in app.py");
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
  await f.chat.getByText("Patched app.py.").waitFor();
  await waitReady();
  await f.page.locator(".tab", { hasText: "app.py" }).first().click();
  await f.page.locator(".tab.active.dirty", { hasText: "app.py" }).waitFor(); // modified, not saved
  assert.equal(await editorText(f.page), "print('new')\n");
  assert.equal(readFileSync(path.join(f.project, "app.py"), "utf8"), "print('old')\n", "the disk is untouched until the user saves");
  await f.shot("edit-applied");
  await f.page.locator(".editor-group-container.active .monaco-editor .view-lines").click();
  await f.page.keyboard.press("Control+Z");
  await f.page.locator(".editor-group-container.active .view-line", { hasText: "print('old')" }).waitFor();
  assert.equal(await editorText(f.page), "print('old')\n");
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
});

test("Stop cancels the turn", async () => {
  await f.fake.script([{ text: "word ".repeat(2000), chunk_size: 5, chunk_delay: 0.05 }]);
  await send("Talk for a long time");
  await f.chat.locator(".message.agent").last().getByText("word").first().waitFor();
  await f.chat.locator("#stop:not([disabled])").click();
  await f.chat.getByText("Stopped.").waitFor();
  await waitReady();
  const said = await f.chat.locator(".message.agent").last().innerText();
  assert.ok(said.length < 10_000, "the answer stopped before its end");
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
  assert.equal(await f.chat.locator("#attachments .chip").count(), 0, "attachments go with one prompt");
  await waitReady();
});

test("load a past session: it is listed and its thread replays into the view", async () => {
  await f.chat.locator("#new").click();
  await f.chat.locator(".message").first().waitFor({ state: "detached" });
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
});
