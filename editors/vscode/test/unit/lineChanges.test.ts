import assert from "node:assert/strict";
import { test } from "node:test";
import { lineChanges } from "../../src/textEdits";

test("an edit card counts the lines added and removed, not the lengths before and after", () => {
  assert.deepEqual(lineChanges("print('old')\n", "print('new')\n"), { added: 1, removed: 1 });
  assert.deepEqual(lineChanges("a\nb\nc\n", "a\nb\nx\ny\nc\n"), { added: 2, removed: 0 });
  assert.deepEqual(lineChanges("a\nb\nc\n", "a\nc\n"), { added: 0, removed: 1 });
  assert.deepEqual(lineChanges("", "one\ntwo\n"), { added: 2, removed: 0 });
  assert.deepEqual(lineChanges("same\n", "same\n"), { added: 0, removed: 0 });
});
