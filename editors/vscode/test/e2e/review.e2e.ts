/**
 * The review flow in a real VS Code (code-server) driven through chromium: the diff of a
 * proposed edit closes once decided (in the view or with its own title buttons), the files the
 * agent changed are listed above the composer with Keep / Undo / Undo all, and a past message
 * is retried or edited and sent again through the agent's rewind. Screenshots land in
 * test-output/review/.
 */
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import * as path from "node:path";
import { useFixture, type Fixture } from "./fixture";
import { editorText, openFile, runCommand, widenSidebar } from "./workbench";

let f: Fixture;

const { test, send, waitReady } = useFixture(
  {
    name: "review",
    files: {
      "app.py": "print('old')\n",
      "notes.txt": "first draft\n",
      "lib/util.py": "def f():\n    return 1\n",
      // Names an `@ca` completion also matches, ahead of calc.py in the folder's order.
      "aardvark/local_cache_settings.py": "",
      "docs/vocabulary_catalogue.md": "",
      "calc.py": "print(1 + 1)\n",
    },
  },
  (started) => (f = started),
);

const onDisk = (name: string): string => readFileSync(path.join(f.project, name), "utf8");
const reviewTabs = () => f.page.locator(".tab", { hasText: "proposed by Hermes" });

test("a reviewed edit's diff closes once it is allowed with the diff's own button, or in the view", async () => {
  await runCommand(f.page, "Hermes: Open chat");
  await waitReady();
  await f.chat.locator("body[data-session-id]").waitFor({ state: "attached" }); // the session exists
  await widenSidebar(f.page, 520);
  await openFile(f.page, "app.py");
  await f.fake.script([
    { tool_calls: [{ name: "patch", arguments: { path: "app.py", old_text: "old", new_text: "new" } }] },
    { tool_calls: [{ name: "write_file", arguments: { path: "helper.py", content: "def helper():\n    return 42\n" } }] },
    { text: "Changed app.py and added helper.py." },
  ]);
  await send("Change old to new and add a helper");
  const first = f.chat.locator(".permission:not(.settled)");
  await first.locator("button.review").click();
  await f.page.locator(".tab.active", { hasText: "proposed by Hermes" }).waitFor();
  const allow = f.page.locator('.editor-actions .action-label[aria-label^="Allow this edit"]');
  await allow.waitFor();
  await f.shot("diff-with-its-own-buttons");
  await allow.click();
  await f.chat.locator(".permission.settled").first().waitFor();
  await reviewTabs().first().waitFor({ state: "detached" });

  const second = f.chat.locator(".permission:not(.settled)");
  await second.locator("button.review").click();
  await f.page.locator(".tab.active", { hasText: "proposed by Hermes" }).waitFor();
  await second.locator('button[data-option-id="allow_once"]').click(); // answered in the view
  await reviewTabs().first().waitFor({ state: "detached" });
  await f.chat.getByText("Changed app.py and added helper.py.").waitFor();
  await waitReady();
  assert.equal(await reviewTabs().count(), 0, "a decided review stays open");
  assert.equal(onDisk("app.py"), "print('new')\n");
});

test("the changed files are listed with +/- lines; Undo restores the file on disk and in its editor, and deletes a created one", async () => {
  const panel = f.chat.locator("#changes");
  await panel.waitFor();
  assert.equal(await panel.locator(".count").innerText(), "2 files changed");
  const app = panel.locator('li[data-path$="/app.py"]');
  const helper = panel.locator('li[data-path$="/helper.py"]');
  assert.equal(await app.locator("a.file").innerText(), "app.py");
  assert.deepEqual([await app.locator(".added").innerText(), await app.locator(".removed").innerText()], ["+1", "−1"]);
  assert.equal(await helper.locator(".created").innerText(), "new");
  assert.deepEqual([await helper.locator(".added").innerText(), await helper.locator(".removed").innerText()], ["+2", "−0"]);
  // The edit card of the turn counts lines too.
  const card = f.chat.locator('details.tool[data-status="completed"] .diff').first();
  assert.equal(await card.locator(".added").innerText(), "+1");
  await f.page.locator(".tab", { hasText: "app.py" }).first().click();
  await f.page.locator(".editor-group-container.active .view-line", { hasText: "print('new')" }).waitFor();
  await helper.locator("a.file").click(); // the name opens it
  await f.page.locator(".tab.active", { hasText: "helper.py" }).waitFor();
  await f.shot("changed-files");

  await app.locator("button.undo").click();
  await app.waitFor({ state: "detached" });
  assert.equal(onDisk("app.py"), "print('old')\n");
  await f.page.locator(".tab", { hasText: "app.py" }).first().click();
  await f.page.locator(".editor-group-container.active .view-line", { hasText: "print('old')" }).waitFor();
  assert.equal(await editorText(f.page), "print('old')\n");
  await f.page.locator(".tab.active:not(.dirty)", { hasText: "app.py" }).waitFor(); // on disk too: saved

  await helper.locator("button.undo").click();
  await panel.waitFor({ state: "hidden" });
  assert.equal(existsSync(path.join(f.project, "helper.py")), false, "Undo of a created file deletes it");
  await f.page.locator(".tab", { hasText: "helper.py" }).waitFor({ state: "detached" });
  await f.shot("changes-undone");
});

test("Keep clears a file and leaves it changed; Undo all restores the rest", async () => {
  await f.chat.locator('select[data-config-id="mode"]').selectOption("yolo");
  await f.page.locator(".statusbar-item", { hasText: "Hermes · yolo" }).waitFor();
  await f.fake.script([
    { tool_calls: [{ name: "write_file", arguments: { path: "notes.txt", content: "second draft\n" } }] },
    { tool_calls: [{ name: "patch", arguments: { path: "lib/util.py", old_text: "return 1", new_text: "return 2" } }] },
    { tool_calls: [{ name: "patch", arguments: { path: "app.py", old_text: "old", new_text: "newer" } }] },
    { text: "Three files changed." },
  ]);
  await send("Change three files");
  await f.chat.getByText("Three files changed.").waitFor();
  await waitReady();
  const panel = f.chat.locator("#changes");
  await panel.locator(".count", { hasText: "3 files changed" }).waitFor();
  await panel.locator('li[data-path$="/notes.txt"] button.keep').click();
  await panel.locator(".count", { hasText: "2 files changed" }).waitFor();
  assert.equal(onDisk("notes.txt"), "second draft\n", "Keep leaves the file as the agent made it");
  await f.shot("kept-one");
  await panel.locator("button.undo-all").click();
  await panel.waitFor({ state: "hidden" });
  assert.equal(onDisk("lib/util.py"), "def f():\n    return 1\n");
  assert.equal(onDisk("app.py"), "print('old')\n");
  assert.equal(onDisk("notes.txt"), "second draft\n");
});

test("Undo of a file the user changed since asks first: Cancel keeps their edit, Undo anyway restores", async () => {
  await f.fake.script([{ tool_calls: [{ name: "patch", arguments: { path: "app.py", old_text: "old", new_text: "agent" } }] }, { text: "Patched once more." }]);
  await send("Patch app.py once more");
  await f.chat.getByText("Patched once more.").waitFor();
  await waitReady();
  await openFile(f.page, "app.py");
  const line = (text: string) => f.page.locator(".editor-group-container.active .view-line", { hasText: text });
  await line("print('agent')").waitFor();
  await f.page.locator(".editor-group-container.active .monaco-editor .view-lines").click();
  await f.page.keyboard.press("Control+End");
  await f.page.keyboard.type("# mine");
  await line("# mine").waitFor();
  const row = f.chat.locator('#changes li[data-path$="/app.py"]');
  await row.locator("button.undo").click();
  const dialog = f.page.locator(".monaco-dialog-box");
  await dialog.getByText("app.py changed after Hermes edited it").waitFor();
  assert.doesNotMatch(await dialog.innerText(), new RegExp(f.project), "the project's path is noise");
  await f.shot("undo-asks");
  await dialog.getByRole("button", { name: "Cancel" }).click();
  await dialog.waitFor({ state: "hidden" });
  assert.match(await editorText(f.page), /# mine/, "declined, yet the user's edit is gone");
  await row.waitFor();
  await row.locator("button.undo").click();
  await dialog.getByRole("button", { name: "Undo anyway" }).click();
  await row.waitFor({ state: "detached" });
  await line("print('old')").waitFor();
  assert.equal(await editorText(f.page), "print('old')\n");
  await f.page.locator(".tab.active:not(.dirty)", { hasText: "app.py" }).waitFor();
  assert.equal(onDisk("app.py"), "print('old')\n");
});

test("Retry of the last message: the agent rewinds, the view drops the old answer, and the answer comes again", async () => {
  await f.fake.script([{ text: "Answer one." }]);
  await send("question one");
  await f.chat.getByText("Answer one.").waitFor();
  await waitReady();
  await f.fake.script([{ tool_calls: [{ name: "write_file", arguments: { path: "notes.txt", content: "third draft\n" } }] }, { text: "Answer two." }]);
  await send("question two");
  await f.chat.getByText("Answer two.").waitFor();
  await waitReady();
  assert.equal(onDisk("notes.txt"), "third draft\n");
  await f.fake.script([{ text: "Answer two, regenerated." }]);
  const last = f.chat.locator(".message.user", { hasText: "question two" });
  await last.locator("button.retry-message").click();
  await f.chat.getByText("Answer two, regenerated.").waitFor();
  await waitReady();
  assert.equal(await f.chat.getByText("Answer two.", { exact: true }).count(), 0, "the old answer is still in the thread");
  assert.equal(await f.chat.locator(".message.user", { hasText: "question two" }).count(), 1);
  assert.equal(onDisk("notes.txt"), "second draft\n", "the retried turn's file change was rewound");
  await f.chat.locator("#changes").waitFor({ state: "hidden" }); // nothing left to decide
  await f.chat.locator(".notice", { hasText: "restored notes.txt" }).waitFor();
  const said = JSON.stringify((await f.fake.requests()).last);
  assert.equal(said.split("question two").length - 1, 1, "the model saw the first try of the message");
  assert.doesNotMatch(said, /Answer two\./);
  await f.shot("retried");
});

test("Edit of a past message: the thread from there is replaced by the edited message and its answer", async () => {
  const first = f.chat.locator(".message.user", { hasText: "question one" });
  await first.locator("button.edit-message").click();
  const box = first.locator("textarea.edit-input");
  assert.equal(await box.inputValue(), "question one");
  await box.fill("question one, said better");
  await f.shot("editing");
  await f.fake.script([{ text: "Answer to the better question." }]);
  await first.locator("button.send-edit").click();
  await f.chat.getByText("Answer to the better question.").waitFor();
  await waitReady();
  const users = await f.chat.locator(".message.user .body").allInnerTexts();
  // The file open in the editor goes along as its chip (the view lists it under the text).
  assert.deepEqual(users.slice(-1).map((text) => text.split("\n\nAttached:")[0]), ["question one, said better"]);
  assert.equal(await f.chat.getByText("question two").count(), 0, "a cut-off turn is still shown");
  assert.equal(await f.chat.getByText("Answer one.").count(), 0);
  const said = JSON.stringify((await f.fake.requests()).last);
  assert.match(said, /question one, said better/);
  assert.doesNotMatch(said, /question two|Answer one/, "the model saw the turns cut off");
  await f.shot("edited-and-resent");
});

test("a command typed in full runs on Enter (one that needs its argument is completed)", async () => {
  const input = f.chat.locator("#input");
  await input.fill("");
  await input.pressSequentially("/cost");
  await f.chat.locator("#completions li", { hasText: "/cost" }).first().waitFor();
  await input.press("Enter");
  const command = f.chat.locator(".message.user", { hasText: "/cost" });
  await command.waitFor();
  assert.equal(await command.locator(".message-actions").count(), 0, "a command offers no Edit / Retry");
  await f.chat.getByText("Tokens this session").waitFor();
  assert.equal(await input.inputValue(), "");
  await waitReady();
  // A command that needs its argument is completed, not sent.
  await input.pressSequentially("/steer");
  await f.chat.locator("#completions li", { hasText: "/steer" }).first().waitFor();
  await input.press("Enter");
  assert.equal(await input.inputValue(), "/steer ");
  await input.fill("");
});

test("@ca offers calc.py first, ahead of other names that contain ca", async () => {
  const input = f.chat.locator("#input");
  await input.fill("");
  await input.pressSequentially("Explain @ca");
  const first = f.chat.locator("#completions li").first();
  await first.waitFor();
  await f.chat.locator("#completions li", { hasText: "@calc.py" }).waitFor();
  await f.shot("at-ca");
  assert.equal(await first.locator(".label").innerText(), "@calc.py");
  await input.fill("");
});
