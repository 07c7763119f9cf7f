/**
 * The review flow's client logic against the real `hermes-acp --stdio`: the files the agent
 * changed with Keep / Undo, and edit-and-resend through the agent's `_hermes/rewind`.
 */
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { after, before, test } from "node:test";
import { findPrompt } from "../../src/rewind";
import { FakeModel, scratchDir } from "../support";
import { TestHost } from "./controllerHost";

let fake: FakeModel;
const hosts: TestHost[] = [];

before(async () => {
  fake = await FakeModel.start();
});

after(async () => {
  await Promise.all(hosts.map((host) => host.controller.dispose()));
  await fake.stop();
});

async function yoloHost(name: string): Promise<{ host: TestHost; project: string }> {
  const root = scratchDir(name);
  const project = path.join(root, "project");
  const home = path.join(root, "home");
  mkdirSync(project);
  mkdirSync(home);
  const host = TestHost.forAgent(project, fake, home);
  hosts.push(host);
  await host.controller.newSession();
  await host.controller.setConfig("mode", "yolo"); // edits without asking: this is about what follows
  return { host, project };
}

function lastChanges(host: TestHost): Array<[string, number, number, boolean]> {
  return (host.of("changes").at(-1)?.files ?? []).map((file) => [path.basename(file.path), file.added, file.removed, file.created]);
}

test("the files a turn changed are listed with their line counts; Undo restores an edit and deletes a created file", async () => {
  const { host, project } = await yoloHost("changes");
  const app = path.join(project, "app.py");
  const created = path.join(project, "new.py");
  writeFileSync(app, "print('old')\nprint('same')\n");
  await fake.script([
    { tool_calls: [{ name: "patch", arguments: { path: "app.py", old_text: "old", new_text: "new" } }] },
    { tool_calls: [{ name: "write_file", arguments: { path: "new.py", content: "one\ntwo\n" } }] },
    { tool_calls: [{ name: "patch", arguments: { path: "app.py", old_text: "same", new_text: "changed" } }] },
    { text: "Done." },
  ]);
  assert.equal(await host.controller.prompt([{ type: "text", text: "change things" }], "change things"), "end_turn");
  // One row per file, counted from before the turn's first write of it.
  assert.deepEqual(lastChanges(host), [
    ["app.py", 2, 2, false],
    ["new.py", 2, 0, true],
  ]);
  await host.controller.undoChange(app);
  assert.equal(readFileSync(app, "utf8"), "print('old')\nprint('same')\n");
  assert.deepEqual(lastChanges(host), [["new.py", 2, 0, true]]);
  await host.controller.undoChange(created);
  assert.equal(existsSync(created), false, "Undo of a file the turn created deletes it");
  assert.deepEqual(lastChanges(host), []);
});

test("Keep clears a file; Undo of a file the user changed since asks first, and no is no", async () => {
  const { host, project } = await yoloHost("keep");
  const a = path.join(project, "a.txt");
  const b = path.join(project, "b.txt");
  writeFileSync(a, "a0\n");
  writeFileSync(b, "b0\n");
  await fake.script([
    { tool_calls: [{ name: "write_file", arguments: { path: "a.txt", content: "a1\n" } }] },
    { tool_calls: [{ name: "write_file", arguments: { path: "b.txt", content: "b1\n" } }] },
    { text: "Done." },
  ]);
  await host.controller.prompt([{ type: "text", text: "write both" }], "write both");
  host.controller.changes.keep(a);
  assert.deepEqual(lastChanges(host), [["b.txt", 1, 1, false]]);
  assert.equal(readFileSync(a, "utf8"), "a1\n", "Keep leaves the file as the agent made it");
  writeFileSync(b, "b1\nthe user's own line\n");
  host.confirmAnswer = false;
  await host.controller.undoChange();
  assert.equal(readFileSync(b, "utf8"), "b1\nthe user's own line\n", "declined: the user's edit stays");
  assert.deepEqual(lastChanges(host), [["b.txt", 1, 1, false]]);
  host.confirmAnswer = true;
  await host.controller.undoChange();
  assert.equal(readFileSync(b, "utf8"), "b0\n");
  assert.deepEqual(lastChanges(host), []);
});

test("edit-and-resend rewinds the agent to before that message: the model never sees the turns cut off, and the files go back", async () => {
  const { host, project } = await yoloHost("rewind");
  const file = path.join(project, "notes.txt");
  writeFileSync(file, "first\n");
  await fake.script([{ text: "Answer one." }]);
  await host.controller.prompt([{ type: "text", text: "question one" }], "question one");
  await fake.script([{ tool_calls: [{ name: "write_file", arguments: { path: "notes.txt", content: "second\n" } }] }, { text: "Answer two." }]);
  await host.controller.prompt([{ type: "text", text: "question two" }], "question two");
  assert.equal(readFileSync(file, "utf8"), "second\n");
  assert.deepEqual(lastChanges(host), [["notes.txt", 1, 1, false]]);

  const resend = { type: "resend" as const, ordinal: 1, original: "question two", later: 0, text: "question two, edited", restoreFiles: true };
  assert.equal(await host.controller.rewindFor(resend), true);
  assert.deepEqual(host.of("rewound").map((post) => post.ordinal), [1]);
  assert.equal(readFileSync(file, "utf8"), "first\n", "the files went back with the conversation");
  assert.deepEqual(lastChanges(host), [], "a change the rewind put back is no longer listed");
  assert.match(host.of("notice").at(-1)!.message, /restored notes\.txt/);

  await fake.script([{ text: "Answer to the edit." }]);
  await host.controller.prompt([{ type: "text", text: resend.text }], resend.text);
  const { last } = await fake.requests();
  const said = JSON.stringify(last);
  assert.match(said, /question one/);
  assert.match(said, /question two, edited/);
  assert.doesNotMatch(said, /Answer two|"question two"/, "the model saw the turn that was cut off");
});

test("a message the agent has no prompt for is not rewound (and nothing is cut)", async () => {
  const { host } = await yoloHost("unknown");
  await fake.script([{ text: "Hi." }]);
  await host.controller.prompt([{ type: "text", text: "hello" }], "hello");
  const resend = { type: "resend" as const, ordinal: 0, original: "never said this", later: 0, text: "x", restoreFiles: false };
  assert.equal(await host.controller.rewindFor(resend), false);
  assert.equal(host.of("rewound").length, 0);
  assert.match(host.of("error").at(-1)!.message, /not in the agent's history/);
});

test("an agent without rewind: the edited message goes as a new prompt, after the turns so far", async () => {
  const { host } = await yoloHost("norewind");
  await fake.script([{ text: "First answer." }]);
  await host.controller.prompt([{ type: "text", text: "first" }], "first");
  // As an agent that does not advertise `_hermes/rewind` answers initialize.
  const init = host.controller.initializeResponse!;
  host.controller.initializeResponse = { ...init, agentCapabilities: { ...init.agentCapabilities, _meta: {} } };
  const resend = { type: "resend" as const, ordinal: 0, original: "first", later: 0, text: "first, edited", restoreFiles: true };
  assert.equal(await host.controller.rewindFor(resend), true, "it is sent");
  assert.equal(host.of("rewound").length, 0, "the thread keeps its turns");
  assert.match(host.of("notice").at(-1)!.message, /cannot go back/);
  await fake.script([{ text: "Second answer." }]);
  await host.controller.prompt([{ type: "text", text: resend.text }], resend.text);
  assert.match(JSON.stringify((await fake.requests()).last), /First answer[\s\S]*first, edited/);
});

test("the view's message is found in the agent's prompt list, newest first among equals", () => {
  const prompts = [
    { number: 1, text: "fix it" },
    { number: 2, text: "Explain @app.py <file uri=\"file:///p/app.py\"> print('old') </file>" },
    { number: 3, text: "fix it" },
    { number: 4, text: `${"long ".repeat(13)}long…` },
  ];
  assert.equal(findPrompt(prompts, "fix it", 0), 3);
  assert.equal(findPrompt(prompts, "fix it", 1), 1);
  assert.equal(findPrompt(prompts, "fix it", 2), undefined);
  assert.equal(findPrompt(prompts, "Explain @app.py", 0), 2);
  assert.equal(findPrompt(prompts, `${"long ".repeat(30)}`, 0), 4);
  assert.equal(findPrompt(prompts, "fix", 0), undefined, "a prefix of a word is not the message");
});

test("a prompt sent while the view's session is still being opened goes to that session, not a second one", async () => {
  const root = scratchDir("early");
  const project = path.join(root, "project");
  const home = path.join(root, "home");
  mkdirSync(project);
  mkdirSync(home);
  const host = TestHost.forAgent(project, fake, home);
  hosts.push(host);
  await fake.script([{ text: "Early answer." }]);
  const opening = host.controller.newSession(); // as the view does when it first shows
  const answered = host.controller.prompt([{ type: "text", text: "typed at once" }], "typed at once");
  const sessionId = await opening;
  assert.equal(await answered, "end_turn");
  const created = host.traffic.filter(([way, message]) => way === "out" && message.method === "session/new");
  assert.equal(created.length, 1, "a second session was opened");
  assert.equal(host.controller.sessionId, sessionId);
  const clear = host.posts.findIndex((post) => post.type === "clear");
  const shown = host.posts.findIndex((post) => post.type === "userMessage");
  assert.ok(clear < shown, "the view was cleared after the prompt was shown");
  assert.equal(host.text(), "Early answer.");
});
