/**
 * What goes along with a prompt and what comes back in code blocks, in a real VS Code: the
 * active editor's file and selection as a removable chip, files dropped on the view, a pasted
 * image, and the code block's highlighting and Insert / Apply / New file buttons.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { useFixture, type Fixture } from "./fixture";
import { chatFrameHandle, editorText, openFile, runCommand, widenSidebar } from "./workbench";

let f: Fixture;

const { test, send, waitReady } = useFixture(
  {
    name: "context",
    files: {
      "app.py": "import sys\nLINE_TWO = 2\nLINE_THREE = 3\nprint('old')\n",
      "lib/helpers.py": "def helper():\n    return 'HELPER_BODY'\n",
    },
  },
  (started) => (f = started),
);

/** Sessions in the agent's store (its SQLite file): with this id, or all when null. */
function storedSessions(id: string | null): number {
  const database = path.join(f.home, ".hermes-acp", "sessions.db");
  const query = `import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); print(c.execute("SELECT count(*) FROM sessions WHERE (? IS NULL OR id = ?) AND id IN (SELECT session_id FROM messages)", (sys.argv[2] or None,)*2).fetchone()[0])`;
  const out = spawnSync("python3", ["-c", query, database, id ?? ""], { encoding: "utf8" });
  if (out.status !== 0) throw new Error(out.stderr);
  return Number(out.stdout.trim());
}

/** The last user message the model received, as JSON text. */
async function lastUserMessage(): Promise<string> {
  const { last } = await f.fake.requests();
  const messages = (last as { messages: Array<{ role: string }> }).messages;
  return JSON.stringify(messages.filter((message) => message.role === "user").at(-1));
}

test("the active editor's file is a chip that goes with the prompt; its selection goes with its lines", async () => {
  await runCommand(f.page, "Hermes: Open chat");
  await waitReady();
  await widenSidebar(f.page, 520);
  await openFile(f.page, "app.py");
  const chip = f.chat.locator("#attachments .chip.current");
  await chip.filter({ hasText: /^app\.py/ }).waitFor();
  await f.shot("current-file-chip");
  await f.fake.script([{ text: "It imports sys." }]);
  await send("What does this file do?");
  await f.chat.getByText("It imports sys.").waitFor();
  assert.match(await lastUserMessage(), /LINE_TWO = 2/, "the file went with the prompt");
  await waitReady();

  // Lines 2-3 selected: the chip names them and the prompt carries them, not the whole file.
  await f.page.locator(".editor-group-container.active .view-line", { hasText: "LINE_TWO" }).click();
  await f.page.keyboard.press("Home");
  await f.page.keyboard.press("Shift+ArrowDown");
  await f.page.keyboard.press("Shift+End");
  await chip.filter({ hasText: "app.py:2-3" }).waitFor();
  await f.shot("selection-chip");
  await f.fake.script([{ text: "Two constants." }]);
  await send("Explain these lines");
  await f.chat.getByText("Two constants.").waitFor();
  const sent = await lastUserMessage();
  assert.match(sent, /LINE_TWO = 2\\nLINE_THREE = 3/);
  assert.doesNotMatch(sent, /import sys|print\('old'\)/, "only the selection went");
  assert.match(sent, /app\.py#L2-L3|lines=\\"2-3\\"/, "the selection's range went with it");
  await waitReady();
});

test("a removed chip is not sent", async () => {
  const chip = f.chat.locator("#attachments .chip.current");
  await chip.locator("button").click();
  await chip.waitFor({ state: "detached" });
  await f.fake.script([{ text: "Nothing attached." }]);
  await send("Anything attached?");
  await f.chat.getByText("Nothing attached.").waitFor();
  assert.doesNotMatch(await lastUserMessage(), /LINE_TWO/);
  await waitReady();
});

test("a file open in the editor but outside the workspace (the user's settings.json) is not offered", async () => {
  await openFile(f.page, "helpers.py");
  const chip = f.chat.locator("#attachments .chip.current");
  await chip.filter({ hasText: "lib/helpers.py" }).waitFor();
  await runCommand(f.page, "Preferences: Open User Settings (JSON)");
  await f.page.locator(".tab.active", { hasText: "settings.json" }).waitFor();
  await chip.filter({ hasText: "lib/helpers.py" }).waitFor({ state: "detached" });
  assert.equal(await chip.count(), 0);
});

test("a file dropped on the view becomes a chip and goes with the prompt", async () => {
  const frame = await chatFrameHandle(f.page);
  const uri = `file://${path.join(f.project, "lib", "helpers.py")}`;
  // What VS Code's explorer puts in the drag (a drop from the explorer into a webview
  // arrives with these types).
  await frame.evaluate((dropped) => {
    const data = new DataTransfer();
    data.setData("application/vnd.code.uri-list", dropped);
    data.setData("text/uri-list", dropped);
    const target = document.getElementById("thread")!;
    target.dispatchEvent(new DragEvent("dragover", { dataTransfer: data, bubbles: true, cancelable: true }));
    target.dispatchEvent(new DragEvent("drop", { dataTransfer: data, bubbles: true, cancelable: true }));
  }, uri);
  const chip = f.chat.locator("#attachments .chip.file:not(.current)", { hasText: "lib/helpers.py" });
  await chip.waitFor();
  await f.shot("dropped-file-chip");
  await f.fake.script([{ text: "A helper." }]);
  await send("What is in the dropped file?");
  await f.chat.getByText("A helper.").waitFor();
  assert.match(await lastUserMessage(), /HELPER_BODY/);
  await chip.waitFor({ state: "detached" }); // it went with that prompt
  await waitReady();
});

test("an image pasted into the input shows as a thumbnail chip and reaches the model as an image", async () => {
  const frame = await chatFrameHandle(f.page);
  // A real PNG drawn in the view, pasted as a clipboard file.
  const base64 = await frame.evaluate(async () => {
    const canvas = document.createElement("canvas");
    canvas.width = 96;
    canvas.height = 64;
    const context = canvas.getContext("2d")!;
    context.fillStyle = "#d33";
    context.fillRect(0, 0, 96, 64);
    context.fillStyle = "#3d3";
    context.fillRect(24, 16, 48, 32);
    const blob = await new Promise<Blob>((resolve) => canvas.toBlob((made) => resolve(made!), "image/png"));
    const data = new DataTransfer();
    data.items.add(new File([blob], "image.png", { type: "image/png" }));
    const input = document.getElementById("input")!;
    input.focus();
    input.dispatchEvent(new ClipboardEvent("paste", { clipboardData: data, bubbles: true, cancelable: true }));
    return canvas.toDataURL("image/png").split(",")[1]!;
  });
  const chip = f.chat.locator("#attachments .chip.image");
  await chip.locator("img.thumbnail").waitFor();
  assert.equal(await f.chat.locator("#input").inputValue(), "", "no text was pasted");
  await f.shot("image-chip");
  await f.fake.script([{ text: "A green square on red." }]);
  await send("What is in the image?");
  await f.chat.getByText("A green square on red.").waitFor();
  const sent = await lastUserMessage();
  assert.match(sent, /image_url/);
  assert.ok(sent.includes(base64.slice(0, 200)), "the model got the pasted image's bytes");
  await waitReady();
});

test("a code block is highlighted and its Insert, Apply (after a diff) and New file buttons work", async () => {
  await f.fake.script([
    {
      text: "Replace app.py with this:\n\n```python app.py\nimport sys\n\ndef greet(name):\n    return f\"hello {name}\"  # new greeting\n```\n\nOr a snippet:\n\n```python ../escape.py\nx = 1\n```\n",
    },
  ]);
  await send("Rewrite app.py");
  const answer = f.chat.locator(".message.agent").last();
  const block = answer.locator("pre").first();
  await block.locator("code .hljs-keyword", { hasText: "def" }).waitFor();
  await waitReady();
  assert.equal(await block.locator(".hljs-string").first().innerText(), 'f"hello {name}"');
  assert.equal(await block.locator(".hljs-comment").innerText(), "# new greeting");
  assert.deepEqual(await block.locator(".code-actions button").allInnerTexts(), ["Copy", "Insert", "Apply", "New file"]);
  // A path that leaves the folder gets no Apply.
  assert.deepEqual(await answer.locator("pre").nth(1).locator(".code-actions button").allInnerTexts(), ["Copy", "Insert", "New file"]);
  // The code's colours are the theme's, not the text colour.
  const frame = await chatFrameHandle(f.page);
  // (No named function inside evaluate: tsx would wrap it in a helper the page lacks.)
  const [keyword, string, plain] = await frame.evaluate(() =>
    [".hljs-keyword", ".hljs-string", ""].map((selector) => getComputedStyle(document.querySelector(`.message.agent pre code ${selector}`)!).color),
  );
  const colours = { keyword, string, plain };
  assert.notEqual(colours.keyword, colours.plain);
  assert.notEqual(colours.string, colours.plain);
  assert.notEqual(colours.keyword, colours.string);
  await f.shot("code-block");

  // Insert: at the cursor of the editor the user was in.
  await f.page.locator(".tab", { hasText: "app.py" }).first().click();
  await f.page.locator(".tab.active", { hasText: "app.py" }).waitFor();
  const editor = f.page.locator(".editor-group-container.active .monaco-editor .view-lines");
  await editor.click();
  await f.page.keyboard.press("Control+End");
  await block.locator("button.insert").click();
  await f.page.locator(".editor-group-container.active .view-line", { hasText: "def greet(name):" }).waitFor();
  assert.match(await editorText(f.page), /^import sys\nLINE_TWO = 2\nLINE_THREE = 3\nprint\('old'\)\nimport sys\n\ndef greet/);
  await f.shot("inserted");
  await f.page.keyboard.press("Control+Z");
  await f.page.locator(".editor-group-container.active .view-line", { hasText: "def greet(name):" }).waitFor({ state: "detached" });

  // Apply: the diff first, nothing written until the user says Apply.
  await block.locator("button.apply").click();
  const diff = f.page.locator(".monaco-diff-editor");
  await diff.waitFor();
  await f.page.locator(".tab.active", { hasText: "code block from Hermes" }).waitFor();
  await diff.locator(".modified-in-monaco-diff-editor .view-line", { hasText: "def greet(name):" }).waitFor();
  await diff.locator(".original-in-monaco-diff-editor .view-line", { hasText: "LINE_TWO" }).waitFor();
  const toast = f.page.locator(".notification-toast", { hasText: "Replace the content of app.py" });
  await toast.waitFor();
  assert.match(readFileSync(path.join(f.project, "app.py"), "utf8"), /LINE_TWO/, "nothing written before Apply");
  await f.shot("apply-review");
  await toast.getByRole("button", { name: "Apply" }).click();
  // The file's own tab (not the diff's), saved: the write is on disk before it shows.
  await f.page.locator(".tab.active:not(.dirty) .label-name", { hasText: /^app\.py$/ }).waitFor();
  assert.equal(readFileSync(path.join(f.project, "app.py"), "utf8"), 'import sys\n\ndef greet(name):\n    return f"hello {name}"  # new greeting\n');

  // New file: an untitled editor with the code.
  await block.locator("button.new-file").click();
  await f.page.locator(".tab.active", { hasText: "Untitled" }).waitFor();
  await f.page.locator(".editor-group-container.active .view-line", { hasText: "def greet(name):" }).waitFor();
  assert.match(await editorText(f.page), /^import sys\n\ndef greet\(name\):/);
  await f.shot("new-file");
});

test("history: dates in words, search, rename, delete (the agent's stored session goes), and the palette list", async () => {
  // A second session, so there is something to search among.
  await f.chat.locator("#new").click();
  await f.chat.locator(".message").first().waitFor({ state: "detached" });
  await f.fake.script([{ text: "Second answer." }]);
  await send("Second session about sorting");
  await f.chat.getByText("Second answer.").waitFor();
  await waitReady();
  const current = (await f.chat.locator("body").getAttribute("data-session-id"))!;

  await f.chat.locator("#history").click();
  const rows = f.chat.locator("#sessions .session-row");
  await rows.nth(1).waitFor();
  assert.deepEqual(await rows.locator(".title").allInnerTexts(), ["Second session about sorting", "What does this file do?"]);
  for (const date of await rows.locator(".date").allInnerTexts()) assert.match(date, /^(just now|a minute ago|\d+ minutes ago)$/);
  await f.chat.locator("#session-search").fill("file");
  await rows.filter({ hasText: "Second session" }).waitFor({ state: "detached" });
  assert.deepEqual(await rows.locator(".title").allInnerTexts(), ["What does this file do?"]);
  await f.shot("history-search");

  // Rename: a name the user gives, kept by VS Code (the agent has none to set).
  await rows.first().locator("button.rename").click();
  const box = f.page.locator(".quick-input-widget", { hasText: "rename the session" });
  await box.waitFor();
  await box.locator("input").fill("Chips and code blocks");
  await f.page.keyboard.press("Enter");
  await f.chat.locator("#session-search").fill("");
  await rows.locator(".title", { hasText: "Chips and code blocks" }).waitFor();
  await f.shot("history-renamed");

  // Delete the session open in the view: asked first; the agent deletes it; a new one starts.
  await rows.filter({ hasText: "Second session" }).locator("button.delete").click();
  const dialog = f.page.locator(".monaco-dialog-box", { hasText: "Delete “Second session about sorting”?" });
  await dialog.waitFor();
  assert.match(await dialog.innerText(), /The agent deletes its stored conversation/);
  await f.shot("history-delete-confirm");
  await dialog.getByRole("button", { name: "Delete" }).click();
  await rows.filter({ hasText: "Second session" }).waitFor({ state: "detached" });
  await f.chat.locator(`body:not([data-session-id="${current}"])`).waitFor({ state: "attached" });
  assert.equal(storedSessions(current), 0, "the agent's stored session is gone");
  assert.equal(storedSessions(null), 1, "the other session is still stored");

  // The palette's list: the same names, dates in words, type to search.
  await runCommand(f.page, "Hermes: Open a past session");
  const row = f.page.locator(".quick-input-list .monaco-list-row", { hasText: "Chips and code blocks" });
  await row.waitFor();
  assert.match(await row.innerText(), /just now|minutes? ago/);
  assert.equal(await f.page.locator(".quick-input-list .monaco-list-row", { hasText: "Second session" }).count(), 0);
  await f.shot("history-palette");
  await f.page.keyboard.press("Escape");
});
