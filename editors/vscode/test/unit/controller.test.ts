/**
 * The extension's client logic (ChatController and what it drives) against the real
 * `hermes-acp --stdio`, whose model is the Python suite's scripted HTTP server.
 */
import assert from "node:assert/strict";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { after, before, test } from "node:test";
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

function newHost(name: string): { host: TestHost; project: string; home: string } {
  const root = scratchDir(name);
  const project = path.join(root, "project");
  const home = path.join(root, "home");
  mkdirSync(project);
  mkdirSync(home);
  const host = TestHost.forAgent(project, fake, home);
  hosts.push(host);
  return { host, project, home };
}

test("a new session shows the agent's mode and model pickers, and a prompt streams its answer", async () => {
  const { host } = newHost("stream");
  // The agent merges what arrives within one read: the model holds after its first piece,
  // so the view must show it before the rest exists.
  await fake.script([
    { text: "Hello from **Hermes**, streamed in pieces.", chunk_size: 5, reasoning: "Thinking it over.", hold_after_first_text: true },
  ]);
  const sessionId = await host.controller.newSession();
  assert.ok(sessionId);
  const session = host.of("session").at(-1)!;
  assert.deepEqual(
    session.configOptions.map((option) => option.category),
    ["mode", "model"],
  );
  assert.equal(host.controller.mode, "ask");
  const answered = host.controller.prompt([{ type: "text", text: "hi" }], "hi");
  const firstPiece = await host.waitFor(() => host.of("update").find((post) => post.update.sessionUpdate === "agent_message_chunk"));
  assert.equal(host.text(), "Hello");
  assert.ok(firstPiece);
  await fake.release();
  const stop = await answered;
  assert.equal(stop, "end_turn");
  const chunks = host.of("update").filter((post) => post.update.sessionUpdate === "agent_message_chunk");
  assert.ok(chunks.length > 1, "the answer arrives in several chunks");
  assert.equal(host.text(), "Hello from **Hermes**, streamed in pieces.");
  assert.equal(host.text("agent_thought_chunk"), "Thinking it over.");
  assert.deepEqual(host.of("userMessage").map((post) => post.text), ["hi"]);
  assert.deepEqual(host.of("turnEnded").map((post) => post.stopReason), ["end_turn"]);
  assert.equal(host.controller.state, "ready");
  // The raw-traffic log saw both directions, in order.
  const [direction, first] = host.traffic[0]!;
  assert.deepEqual([direction, first.method], ["out", "initialize"]);
  const answer = host.traffic.find(([way, message]) => way === "in" && message.id === first.id);
  assert.equal((answer?.[1].result as { protocolVersion: number }).protocolVersion, 1);
  assert.ok(host.traffic.some(([way, message]) => way === "in" && message.method === "session/update"));
});

test("the agent reads the open buffer's unsaved text, not the file on disk", async () => {
  const { host, project } = newHost("read");
  const file = path.join(project, "notes.txt");
  writeFileSync(file, "saved text on disk\n");
  host.buffers.set(file, "UNSAVED text in the editor\n");
  await fake.script([{ tool_calls: [{ name: "read_file", arguments: { path: "notes.txt" } }] }, { text: "Read it." }]);
  await host.controller.prompt([{ type: "text", text: "read notes.txt" }], "read notes.txt");
  const card = host.of("update").find((post) => post.update.sessionUpdate === "tool_call_update" && post.update.status === "completed");
  assert.ok(card, "the read's tool card completes");
  const requests = await fake.requests();
  assert.ok(requests.count >= 2);
  // The agent answered the model with what the editor gave it.
  const content = JSON.stringify(host.of("update").map((post) => post.update));
  assert.match(content, /UNSAVED text in the editor/);
  assert.doesNotMatch(content, /saved text on disk/);
});

test("an edit waits for permission; allowing it writes through the editor, rejecting leaves the file alone", async () => {
  const { host, project } = newHost("permission");
  const file = path.join(project, "app.py");
  writeFileSync(file, "print('old')\n");
  await fake.script([
    { tool_calls: [{ name: "patch", arguments: { path: "app.py", old_text: "old", new_text: "new" } }] },
    { text: "Patched." },
  ]);
  const turn = host.controller.prompt([{ type: "text", text: "patch it" }], "patch it");
  const asked = await host.waitFor(() => host.of("permission")[0]);
  assert.equal(asked.reviewable, true, "an edit offers Review");
  assert.deepEqual(
    asked.request.options.map((option) => option.optionId),
    ["allow_once", "allow_always", "allow_project", "reject_once", "reject_always"],
  );
  assert.equal(host.controller.permissions.answer(asked.id, "not-offered"), false, "an option the agent did not offer is refused");
  assert.equal(readFileSync(file, "utf8"), "print('old')\n", "nothing is written before the answer");
  assert.ok(host.controller.permissions.answer(asked.id, "allow_once"));
  assert.equal(await turn, "end_turn");
  assert.deepEqual(host.writes.map((write) => [write.path, write.content]), [[file, "print('new')\n"]]);
  assert.deepEqual(host.of("permissionSettled").map((post) => post.optionId), ["allow_once"]);

  await fake.script([
    { tool_calls: [{ name: "write_file", arguments: { path: "app.py", content: "overwritten\n" } }] },
    { text: "Fine, I won't." },
  ]);
  const second = host.controller.prompt([{ type: "text", text: "overwrite it" }], "overwrite it");
  const again = await host.waitFor(() => host.of("permission")[1]);
  host.controller.permissions.answer(again.id, "reject_once");
  assert.equal(await second, "end_turn");
  assert.equal(readFileSync(file, "utf8"), "print('new')\n");
  assert.equal(host.writes.length, 1);
});

test("a command runs in the editor's terminal and its output streams into the view", async () => {
  const { host } = newHost("terminal");
  await fake.script([
    { tool_calls: [{ name: "terminal", arguments: { command: "echo one; echo two" } }] },
    { text: "Ran it." },
  ]);
  const turn = host.controller.prompt([{ type: "text", text: "run it" }], "run it");
  const asked = await host.waitFor(() => host.of("permission")[0]);
  host.controller.permissions.answer(asked.id, "allow_once");
  assert.equal(await turn, "end_turn");
  const output = host.of("terminalOutput").map((post) => post.text).join("");
  assert.equal(output, "one\ntwo\n");
  const terminalId = host.of("terminalOutput")[0]!.terminalId;
  assert.deepEqual(host.of("terminalExit").map((post) => [post.terminalId, post.exitCode]), [[terminalId, 0]]);
  const shown = host.of("update").some(
    (post) => post.update.sessionUpdate === "tool_call_update" && (post.update.content ?? []).some((item) => item.type === "terminal" && item.terminalId === terminalId),
  );
  assert.ok(shown, "the tool card embeds the terminal");
});

test("Stop cancels a streaming turn and a pending permission", async () => {
  const { host } = newHost("cancel");
  await fake.script([{ text: "word ".repeat(400), chunk_size: 5, chunk_delay: 0.02 }]);
  const turn = host.controller.prompt([{ type: "text", text: "talk" }], "talk");
  await host.waitFor(() => host.text().length > 0);
  await host.controller.cancel();
  assert.equal(await turn, "cancelled");
  assert.ok(host.text().length < 2000, "the answer stopped early");

  await fake.script([{ tool_calls: [{ name: "terminal", arguments: { command: "echo hi" } }] }, { text: "unused" }]);
  const second = host.controller.prompt([{ type: "text", text: "run" }], "run");
  const asked = await host.waitFor(() => host.of("permission")[0]);
  await host.controller.cancel();
  assert.equal(await second, "cancelled");
  assert.deepEqual(host.of("permissionSettled").map((post) => [post.id, post.optionId]), [[asked.id, null]]);
  assert.equal(host.of("terminalOutput").length, 0, "the command never ran");
});

test("switching the mode goes through session/set_config_option and the view hears it", async () => {
  const { host } = newHost("mode");
  await host.controller.newSession();
  await host.controller.setConfig("mode", "plan");
  assert.equal(host.controller.mode, "plan");
  const last = host.of("session").at(-1)!;
  const mode = last.configOptions.find((option) => option.id === "mode");
  assert.ok(mode && "currentValue" in mode && mode.currentValue === "plan");
  await host.controller.setConfig("mode", "no-such-mode");
  assert.equal(host.controller.mode, "plan", "a refused value changes nothing");
  assert.match(host.of("error").at(-1)!.message, /Changing the setting failed/);
});

test("past sessions are listed and one opens with its thread replayed into the view", async () => {
  const { host, project, home } = newHost("load");
  await fake.script([{ text: "The first answer." }]);
  const first = await host.controller.newSession();
  await host.controller.prompt([{ type: "text", text: "first question" }], "first question");
  await host.controller.dispose();

  const reopened = TestHost.forAgent(project, fake, home);
  hosts.push(reopened);
  const sessions = await reopened.controller.listSessions();
  assert.deepEqual(sessions.map((session) => session.sessionId), [first]);
  assert.ok(await reopened.controller.loadSession(first!));
  assert.equal(reopened.text("user_message_chunk"), "first question");
  assert.equal(reopened.text(), "The first answer.");
  const clear = reopened.posts.findIndex((post) => post.type === "clear");
  // The replay comes before the `session` message: the clear says whose paths follow.
  assert.deepEqual(reopened.posts[clear], { type: "clear", cwd: project });
  const replay = reopened.posts.findIndex((post) => post.type === "update");
  assert.ok(clear >= 0 && clear < replay, "the view is cleared before the replay");
});

test("the view is told of a session only once the host has remembered it (a reload then comes back to it)", async () => {
  const { host, project, home } = newHost("remember");
  await fake.script([{ text: "Noted." }]);
  const first = await host.controller.newSession();
  assert.deepEqual(host.chosen, [first]);
  await host.controller.prompt([{ type: "text", text: "remember me" }], "remember me"); // a session with a turn is kept
  await host.controller.dispose();

  const reopened = TestHost.forAgent(project, fake, home);
  hosts.push(reopened);
  let stored!: () => void;
  reopened.remembering = new Promise<void>((resolve) => (stored = resolve));
  const loading = reopened.controller.loadSession(first!);
  await reopened.waitFor(() => reopened.chosen.length > 0 || reopened.of("error").length > 0);
  assert.deepEqual(reopened.chosen, [first]);
  assert.equal(reopened.of("session").length, 0, "nothing tells the view before the id is stored");
  stored();
  assert.ok(await loading);
  assert.equal(reopened.of("session").at(-1)!.sessionId, first);
});

test("with no model configured the view offers to set Hermes up", async () => {
  const root = scratchDir("auth");
  const host = new TestHost(root, {
    command: path.resolve(__dirname, "..", "..", "..", "..", ".venv", "bin", "hermes-acp"),
    args: ["--stdio"],
    env: { HOME: root, HERMES_ACP_HOME: path.join(root, ".hermes-acp"), HERMES_ACP_WARM: "0", OPENAI_API_KEY: "", ANTHROPIC_API_KEY: "", OPENROUTER_API_KEY: "", HERMES_ACP_API_KEY: "" },
    source: "test",
  });
  hosts.push(host);
  assert.equal(await host.controller.newSession(), undefined);
  const error = host.of("error").at(-1)!;
  assert.equal(error.action, "setup");
  assert.ok((host.controller.initializeResponse?.authMethods ?? []).length > 0);
});

test("no agent installed: a clear message that says how to install it", async () => {
  const host = new TestHost(scratchDir("none"), undefined);
  assert.equal(await host.controller.newSession(), undefined);
  const error = host.of("error")[0]!;
  assert.equal(error.action, "install");
  assert.match(error.message, /pip install hermes-acp-agent/);
  assert.equal(host.controller.state, "error");
});
