import assert from "node:assert/strict";
import * as path from "node:path";
import { test } from "node:test";
import { inWords } from "../../src/relativeTime";
import { SessionNames } from "../../src/sessionNames";
import { scratchDir } from "../support";

test("dates in words: minutes, hours today, yesterday, days, weeks, then the date", () => {
  const now = new Date(2026, 10, 27, 15, 0, 0);
  const at = (days: number, hours: number, minutes = 0): Date => new Date(2026, 10, 27 - days, 15 - hours, -minutes);
  assert.equal(inWords(at(0, 0, 0), now), "just now");
  assert.equal(inWords(at(0, 0, 1), now), "a minute ago");
  assert.equal(inWords(at(0, 0, 25), now), "25 minutes ago");
  assert.equal(inWords(at(0, 2), now), "2 hours ago");
  assert.equal(inWords(at(0, 14, 30), now), "15 hours ago"); // 00:30 today
  assert.equal(inWords(at(0, 16), now), "yesterday"); // 23:00 the day before
  assert.equal(inWords(at(1, 10), now), "yesterday");
  assert.equal(inWords(at(3, 0), now), "3 days ago");
  assert.equal(inWords(at(9, 0), now), "last week");
  assert.equal(inWords(at(20, 0), now), "2 weeks ago");
  assert.match(inWords(new Date(2025, 0, 5), now), /2025/);
});

test("the user's session names and hidden sessions apply to the agent's list, and survive a new window", async () => {
  const dir = path.join(scratchDir("names"), "storage");
  const names = new SessionNames(dir);
  const list = [
    { sessionId: "a", cwd: "/p", title: "Fix the build" },
    { sessionId: "b", cwd: "/p", title: "Add tests" },
  ];
  await names.rename("a", "  Build fixes  ");
  await names.hide("b");
  assert.deepEqual(await new SessionNames(dir).apply(list), [{ sessionId: "a", cwd: "/p", title: "Build fixes" }]);
  await names.rename("a", "");
  assert.deepEqual((await names.apply(list)).map((info) => info.title), ["Fix the build"]);
  // A first prompt that carried a file: the title is what the user typed.
  const attached = [{ sessionId: "c", cwd: "/p", title: "What does this file do? <file…" }];
  assert.deepEqual((await names.apply(attached)).map((info) => info.title), ["What does this file do?"]);
});
