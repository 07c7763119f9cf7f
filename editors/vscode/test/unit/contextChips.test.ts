import assert from "node:assert/strict";
import { mkdirSync, realpathSync, symlinkSync } from "node:fs";
import * as path from "node:path";
import { test } from "node:test";
import { targetInside } from "../../src/safePaths";
import { scratchDir } from "../support";
import { ContextChips } from "../../src/contextChips";
import type { Attachment } from "../../src/protocol";
import { fenceInfo, highlight } from "../../src/webview/highlight";

const APP = "file:///p/app.py";

test("the active editor's file is offered with each prompt until removed, and again for another file", () => {
  let shown: Attachment[] = [];
  const chips = new ContextChips((list) => (shown = list));
  chips.setCurrent({ kind: "file", label: "app.py", uri: APP });
  assert.deepEqual(shown.map((chip) => [chip.label, chip.current]), [["app.py", true]]);
  assert.deepEqual(chips.take(new Set()).blocks, [{ type: "resource_link", uri: APP, name: "app.py" }]);
  assert.equal(shown.length, 1, "the current file stays offered after a prompt");
  chips.remove("current");
  assert.deepEqual(shown, []);
  assert.deepEqual(chips.take(new Set()).blocks, [], "a removed chip is not sent");
  chips.setCurrent({ kind: "file", label: "lib.py", uri: "file:///p/lib.py" });
  assert.deepEqual(chips.list().map((chip) => chip.label), ["lib.py"]);
});

test("a selection goes as an embedded resource with its lines; a file the prompt @-links goes once", () => {
  const chips = new ContextChips(() => undefined);
  chips.setCurrent({ kind: "selection", label: "app.py:2-3", uri: APP, text: "b\nc\n", startLine: 2, endLine: 3 });
  chips.add({ kind: "file", label: "lib.py", uri: "file:///p/lib.py" });
  chips.add({ kind: "image", label: "shot.png", mimeType: "image/png", data: "iVBORw0KGgo=" });
  const { blocks, labels } = chips.take(new Set(["file:///p/lib.py"]));
  assert.deepEqual(labels, ["app.py:2-3", "shot.png"]);
  assert.deepEqual(blocks, [
    { type: "resource", resource: { uri: `${APP}#L2-L3`, text: "b\nc\n", mimeType: "text/plain" } },
    { type: "image", data: "iVBORw0KGgo=", mimeType: "image/png" },
  ]);
  assert.deepEqual(chips.list().map((chip) => chip.label), ["app.py:2-3"], "added chips go with one prompt");
});

test("Send selection of the current selection is one chip, not two", () => {
  const chips = new ContextChips(() => undefined);
  const selection = { kind: "selection" as const, label: "app.py:2-2", uri: APP, text: "x", startLine: 2, endLine: 2 };
  chips.setCurrent(selection);
  chips.add(selection);
  assert.deepEqual(chips.list().map((chip) => [chip.label, chip.current]), [["app.py:2-2", false]]);
  assert.equal(chips.take(new Set()).blocks.length, 1);
});

test("a fence names its file in the ways models write it; code is highlighted and escaped", () => {
  assert.deepEqual(fenceInfo("python app.py"), { language: "python", path: "app.py" });
  assert.deepEqual(fenceInfo("ts:src/x.ts"), { language: "ts", path: "src/x.ts" });
  assert.deepEqual(fenceInfo("src/lib/util.rs"), { language: "rust", path: "src/lib/util.rs" });
  assert.deepEqual(fenceInfo('js title="web/app.js"'), { language: "js", path: "web/app.js" });
  assert.deepEqual(fenceInfo("python"), { language: "python", path: null });
  assert.deepEqual(fenceInfo("python ../../etc/cron.py x"), { language: "python", path: null }, "no parent steps in a named path");
  const html = highlight("def f():\n    return '<b>'\n", "python");
  assert.match(html, /<span class="hljs-keyword">def<\/span>/);
  assert.match(html, /&lt;b&gt;/);
  assert.equal(highlight("x", "no-such-language"), "");
});

test("Apply to file writes only inside the folder: no parent steps, no absolute path elsewhere, no link out, no .git", async () => {
  const root = scratchDir("apply");
  const outside = scratchDir("outside");
  mkdirSync(path.join(root, "src"));
  symlinkSync(outside, path.join(root, "out-link"));
  assert.deepEqual(await targetInside(root, "src/new.py"), { file: path.join(realpathSync(root), "src", "new.py") });
  for (const named of ["../x.py", path.join(outside, "x.py"), "out-link/x.py", "out-link/deeper/x.py", ".git/hooks/pre-commit", "src/../../x.py"]) {
    assert.ok("refused" in (await targetInside(root, named)), named);
  }
});

test("Apply to file never writes into .git through a link inside the folder, nor by another case of its name", async () => {
  // A sandboxed command may make `docs` a link to `.git/hooks` (inside the folder): the model's
  // code block named `docs/pre-commit`, the diff showed a new docs file, and Apply wrote git's
  // hook, which runs outside any sandbox on the next commit. On a case-insensitive disk
  // (macOS) `.Git/hooks/pre-commit` is the same file.
  const root = scratchDir("apply-git");
  mkdirSync(path.join(root, ".git", "hooks"), { recursive: true });
  symlinkSync(path.join(root, ".git", "hooks"), path.join(root, "docs"));
  symlinkSync(path.join(root, ".git"), path.join(root, "meta"));
  for (const named of ["docs/pre-commit", "meta/config", "meta/hooks/new/pre-push", ".Git/hooks/pre-commit", "sub/.GIT/config"]) {
    assert.ok("refused" in (await targetInside(root, named)), named);
  }
});
