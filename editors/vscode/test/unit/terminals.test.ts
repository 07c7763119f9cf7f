import assert from "node:assert/strict";
import { test } from "node:test";
import { keepTail, shownCommand, Terminals } from "../../src/terminals";

function recordingTerminals(): { terminals: Terminals; shown: string[]; released: string[] } {
  const shown: string[] = [];
  const released: string[] = [];
  const terminals = new Terminals({
    opened: () => undefined,
    output: (_id, text) => shown.push(text),
    exited: () => undefined,
    released: (id) => released.push(id),
  });
  return { terminals, shown, released };
}

test("keepTail keeps the newest bytes and never splits a UTF-8 character", () => {
  const text = Buffer.from("aé€b"); // 1 + 2 + 3 + 1 bytes
  assert.equal(keepTail(text, 4).toString(), "€b");
  assert.equal(keepTail(text, 3).toString(), "b"); // 3 bytes would cut into "€"
  assert.equal(keepTail(text, 100).toString(), "aé€b");
});

test("a command's output streams, is kept within outputByteLimit, and reports its exit", async () => {
  const { terminals, shown } = recordingTerminals();
  const id = terminals.create({ sessionId: "s", command: "bash", args: ["-c", "printf 'first\\n'; printf 'second-line\\n'; exit 3"], outputByteLimit: 12 }, process.cwd());
  const status = await terminals.waitForExit(id);
  assert.equal(status.exitCode, 3);
  assert.equal(shown.join(""), "first\nsecond-line\n"); // the view saw everything, as it came
  const output = terminals.output(id);
  assert.equal(output.output, "second-line\n");
  assert.equal(output.truncated, true);
  assert.equal(output.exitStatus?.exitCode, 3);
});

test("kill ends the command and what it started; release forgets the terminal", async () => {
  const { terminals, released } = recordingTerminals();
  const id = terminals.create({ sessionId: "s", command: "bash", args: ["-c", "sleep 30 & sleep 30; echo never"] }, process.cwd());
  terminals.kill(id);
  const status = await terminals.waitForExit(id);
  assert.equal(status.signal, "SIGKILL");
  assert.equal(terminals.output(id).output, "");
  terminals.release(id);
  assert.deepEqual(released, [id]);
  assert.throws(() => terminals.output(id), /no terminal/);
});

test("a terminal is named by the user's command, not the sandbox launcher around it", () => {
  const line = "echo hi && ls | wc -l";
  assert.equal(shownCommand({ command: "/usr/bin/bwrap", args: ["--die-with-parent", "--ro-bind", "/", "/", "--", "bash", "-c", line] }), line);
  assert.equal(shownCommand({ command: "bash", args: ["-c", line] }), line);
  assert.equal(shownCommand({ command: "make", args: ["test"] }), "make test");
  assert.equal(shownCommand({ command: "/tmp/hermes-acp-run-x/1a2b/sandboxed", args: [line] }), line);
  assert.equal(shownCommand({ command: "bwrap", args: ["bash", "-c", "x"], _meta: { hermes: { command: "npm test" } } }), "npm test");
});
