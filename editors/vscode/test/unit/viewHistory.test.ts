import assert from "node:assert/strict";
import { test } from "node:test";
import type { ToView } from "../../src/protocol";
import { DROPPED_NOTICE, MAX_REPLAY, MAX_TERMINAL_REPLAY, ViewHistory } from "../../src/viewHistory";

function chunk(text: string, messageId = "m-1"): ToView {
  return { type: "update", update: { sessionUpdate: "agent_message_chunk", messageId, content: { type: "text", text } } };
}

function toolCall(id: number): ToView {
  return { type: "update", update: { sessionUpdate: "tool_call", toolCallId: `call-${id}`, title: `step ${id}`, kind: "read", status: "completed" } };
}

function permission(id: string): ToView {
  return { type: "permission", id, reviewable: false, request: { sessionId: "s", toolCall: { toolCallId: id, title: "run it" }, options: [{ optionId: "allow", name: "Allow", kind: "allow_once" }] } };
}

function textOf(message: ToView | undefined): string | undefined {
  return message?.type === "update" && message.update.sessionUpdate === "agent_message_chunk" && message.update.content.type === "text" ? message.update.content.text : undefined;
}

test("a long streamed answer replays as one message with all of its text, and what was posted stays as it was", () => {
  const history = new ViewHistory();
  history.add({ type: "clear", cwd: "/work" });
  history.add({ type: "userMessage", text: "explain" });
  const posted: ToView[] = [];
  for (let i = 0; i < 20_000; i += 1) {
    const message = chunk(`${i} `);
    posted.push(message);
    history.add(message);
  }
  const replay = history.replay();
  assert.equal(replay.length, 3);
  assert.equal(textOf(replay[2]), Array.from({ length: 20_000 }, (_, i) => `${i} `).join(""));
  assert.equal(textOf(posted[0]), "0 ", "the first chunk, already posted to the view, is not grown");
});

test("a long session's replay is bounded; it keeps the newest thread, the latest state and the permission still waiting", () => {
  const history = new ViewHistory();
  history.add({ type: "clear", cwd: "/work" });
  history.add({ type: "session", sessionId: "s", cwd: "/work", configOptions: [] });
  history.add(permission("waiting"));
  history.add(permission("answered"));
  history.add({ type: "permissionSettled", id: "answered", optionId: "allow" });
  const calls = 5 * MAX_REPLAY;
  for (let i = 0; i < calls; i += 1) {
    history.add({ type: "state", state: i % 2 ? "busy" : "ready" });
    history.add(toolCall(i));
  }
  const replay = history.replay();
  assert.ok(replay.length <= MAX_REPLAY + 1, `${replay.length} messages replayed`);
  assert.deepEqual(replay.slice(0, 2), [{ type: "clear", cwd: "/work" }, { type: "notice", message: DROPPED_NOTICE }]);
  const ids = replay.flatMap((m) => (m.type === "update" && m.update.sessionUpdate === "tool_call" ? [m.update.toolCallId] : []));
  assert.equal(ids.at(-1), `call-${calls - 1}`, "the newest tool call is there");
  assert.ok(!ids.includes("call-0"), "the oldest is gone");
  assert.deepEqual(ids, ids.slice().sort((a, b) => Number(a.slice(5)) - Number(b.slice(5))), "in order, none repeated");
  assert.deepEqual(replay.filter((m) => m.type === "state"), [{ type: "state", state: "busy" }]);
  assert.equal(replay.filter((m) => m.type === "session").length, 1);
  const permissions = replay.flatMap((m) => (m.type === "permission" ? [m.id] : []));
  assert.deepEqual(permissions, ["waiting"], "the unanswered request can still be answered after a reload");
});

test("a new conversation starts the replay afresh", () => {
  const history = new ViewHistory();
  history.add({ type: "clear", cwd: "/old" });
  for (let i = 0; i < 2 * MAX_REPLAY; i += 1) history.add(toolCall(i));
  history.add({ type: "clear", cwd: "/new" });
  history.add({ type: "userMessage", text: "hi" });
  assert.deepEqual(history.replay(), [{ type: "clear", cwd: "/new" }, { type: "userMessage", text: "hi" }]);
});

test("a terminal's output replays as one message with its tail", () => {
  const history = new ViewHistory();
  const line = `${"x".repeat(99)}\n`;
  for (let i = 0; i < 5_000; i += 1) history.add({ type: "terminalOutput", terminalId: "t-1", text: line });
  history.add({ type: "terminalExit", terminalId: "t-1", exitCode: 0, signal: null });
  const replay = history.replay();
  assert.equal(replay.length, 2);
  const output = replay[0];
  assert.ok(output?.type === "terminalOutput");
  assert.equal(output.text, line.repeat(MAX_TERMINAL_REPLAY / line.length));
});

test("a replay waiting for its view is not grown by chunks that arrive meanwhile", () => {
  const history = new ViewHistory();
  history.add(chunk("Hello"));
  const replay = history.replay();
  history.add(chunk(", world"));
  assert.equal(textOf(replay[0]), "Hello", "the backlog gets ', world' as its own message");
  assert.equal(textOf(history.replay()[0]), "Hello, world");
});
