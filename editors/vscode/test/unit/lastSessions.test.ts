import assert from "node:assert/strict";
import { readFileSync, writeFileSync, mkdirSync } from "node:fs";
import * as path from "node:path";
import { test } from "node:test";
import { LastSessions } from "../../src/lastSessions";
import { scratchDir } from "../support";

test("the session a folder last showed is on disk once remember resolves, per folder", async () => {
  const dir = path.join(scratchDir("last"), "storage"); // not created yet: remember makes it
  const sessions = new LastSessions(dir);
  assert.equal(await sessions.get("/work/a"), undefined);
  await sessions.remember("/work/a", "s-1");
  await sessions.remember("/work/b", "s-2");
  assert.deepEqual(JSON.parse(readFileSync(sessions.file, "utf8")), { "/work/a": "s-1", "/work/b": "s-2" });
  // A new window reads what the last one wrote.
  const next = new LastSessions(dir);
  assert.equal(await next.get("/work/a"), "s-1");
  assert.equal(await next.get("/work/b"), "s-2");
});

test("choices made in quick succession end with the last one", async () => {
  const sessions = new LastSessions(scratchDir("last-order"));
  await Promise.all(["s-1", "s-2", "s-3", "s-4"].map((id) => sessions.remember("/work/a", id)));
  assert.equal(await sessions.get("/work/a"), "s-4");
});

test("an unreadable file means nothing to come back to, and the next choice replaces it", async () => {
  const dir = scratchDir("last-bad");
  mkdirSync(dir, { recursive: true });
  const sessions = new LastSessions(dir);
  for (const junk of ["{not json", "[1, 2]", '{"/work/a": 7}']) {
    writeFileSync(sessions.file, junk);
    assert.equal(await sessions.get("/work/a"), undefined, junk);
  }
  await sessions.remember("/work/a", "s-1");
  assert.equal(await sessions.get("/work/a"), "s-1");
});
