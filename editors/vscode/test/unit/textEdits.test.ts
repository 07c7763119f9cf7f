import assert from "node:assert/strict";
import { test } from "node:test";
import { proposedText, rankFiles, sliceLines } from "../../src/textEdits";

test("sliceLines reads the lines ACP asks for, 1-based, keeping line ends", () => {
  const text = "one\ntwo\nthree\nfour";
  assert.equal(sliceLines(text), text);
  assert.equal(sliceLines(text, 2, 2), "two\nthree\n");
  assert.equal(sliceLines(text, 3), "three\nfour");
  assert.equal(sliceLines(text, null, 1), "one\n");
  assert.equal(sliceLines(text, 9, 2), "");
});

test("the reviewed text of write_file is its content; of patch, the replacement", () => {
  assert.equal(proposedText("old", { path: "a", content: "new file" }), "new file");
  assert.equal(proposedText("a-x-a", { path: "a", old_text: "a", new_text: "b" }), "b-x-a");
  assert.equal(proposedText("a-x-a", { path: "a", old_text: "a", new_text: "b", replace_all: true }), "b-x-b");
  // "$&" in the new text is literal, not a regular-expression back-reference.
  assert.equal(proposedText("cost", { path: "a", old_text: "cost", new_text: "$& and $1" }), "$& and $1");
});

test("a patch that does not apply has no proposed text (the review says so)", () => {
  assert.equal(proposedText("abc", { path: "a", old_text: "zzz", new_text: "y" }), undefined);
  assert.equal(proposedText("abc", { path: "a", old_text: "", new_text: "y" }), undefined);
  assert.equal(proposedText("abc", { path: "a" }), undefined);
});

test("an @ completion ranks a name that starts with the query first, then names, then paths", () => {
  const found = ["aardvark/local_cache_settings.py", "docs/vocabulary_catalogue.md", "src/ca/main.py", "lib/calc_helpers.py", "calc.py"];
  assert.deepEqual(rankFiles("ca", found), ["calc.py", "lib/calc_helpers.py", "docs/vocabulary_catalogue.md", "aardvark/local_cache_settings.py", "src/ca/main.py"]);
  assert.deepEqual(rankFiles("CA", ["x/Calc.py", "abc.py"]), ["x/Calc.py", "abc.py"]);
});
