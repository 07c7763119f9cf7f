import assert from "node:assert/strict";
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import * as path from "node:path";
import { test } from "node:test";
import type { ChangedFile } from "../../src/protocol";
import { TurnChanges } from "../../src/turnChanges";
import { scratchDir } from "../support";

const onDisk = {
  read: async (file: string) => (existsSync(file) ? readFileSync(file, "utf8") : undefined),
  readDisk: async (file: string) => (existsSync(file) ? readFileSync(file, "utf8") : undefined),
  restore: async (file: string, text: string | undefined) => (text === undefined ? rmSync(file) : writeFileSync(file, text)),
};

test("a second write of a file while the first is still landing: Undo goes back to the text before the first", async () => {
  const file = path.join(scratchDir("turn-changes"), "a.txt");
  writeFileSync(file, "original\n");
  let shown: ChangedFile[] = [];
  const changes = new TurnChanges(onDisk, (files) => (shown = files));
  // The first write is on disk but its request has not returned yet when the second comes.
  let landed!: () => void;
  const onDiskNow = new Promise<void>((resolve) => (landed = resolve));
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  const first = changes.write(file, "one\n", async () => {
    await writeFile(file, "one\n");
    landed();
    await held;
  });
  await onDiskNow;
  const second = changes.write(file, "two\n", () => writeFile(file, "two\n"));
  await new Promise((resolve) => setImmediate(resolve)); // the second has had its turn to read
  release();
  await Promise.all([first, second]);
  assert.equal(await readFile(file, "utf8"), "two\n");
  assert.deepEqual(shown, [{ path: file, created: false, added: 1, removed: 1 }]);
  assert.ok(await changes.undo(file, async () => false));
  assert.equal(readFileSync(file, "utf8"), "original\n");
});

test("a write that fails is not listed", async () => {
  const file = path.join(scratchDir("turn-changes"), "b.txt");
  const changes = new TurnChanges(onDisk, () => undefined);
  await assert.rejects(changes.write(file, "x", async () => Promise.reject(new Error("refused"))));
  assert.deepEqual(changes.list(), []);
});
