import assert from "node:assert/strict";
import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { test } from "node:test";
import { locateAgent } from "../../src/agentLocator";
import { scratchDir } from "../support";

function executable(file: string): string {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, "#!/bin/sh\n");
  chmodSync(file, 0o755);
  return file;
}

test("the hermes.command setting wins, with its args and env", () => {
  const found = locateAgent({ command: "/opt/h/hermes-acp", args: ["--stdio", "--trace", "t"], env: { A: "1" } }, [], "");
  assert.deepEqual(found, { command: "/opt/h/hermes-acp", args: ["--stdio", "--trace", "t"], env: { A: "1" }, source: "setting hermes.command" });
});

test("then hermes-acp on PATH, before the workspace's .venv", () => {
  const root = scratchDir("locate");
  const onPath = executable(path.join(root, "bin", "hermes-acp"));
  const workspace = path.join(root, "ws");
  executable(path.join(workspace, ".venv", "bin", "hermes-acp"));
  const found = locateAgent({}, [workspace], `/nonexistent${path.delimiter}${path.dirname(onPath)}`);
  assert.equal(found?.command, onPath);
  assert.deepEqual(found?.args, ["--stdio"]);
});

test("then the workspace's .venv/bin/hermes-acp; none at all is undefined", () => {
  const root = scratchDir("locate-venv");
  const venvAgent = executable(path.join(root, "ws", ".venv", "bin", "hermes-acp"));
  writeFileSync(path.join(root, "not-executable"), "");
  assert.equal(locateAgent({}, [path.join(root, "empty"), path.join(root, "ws")], root)?.command, venvAgent);
  assert.equal(locateAgent({ command: "  " }, [path.join(root, "empty")], root), undefined);
});
