/**
 * A folder opened in Restricted Mode, then trusted, with no API key yet: the agent does not
 * start until the folder is trusted; the key is set up inside VS Code (SecretStorage), never
 * in settings, and reaches the model provider.
 */
import assert from "node:assert/strict";
import { readdirSync, readFileSync, statSync } from "node:fs";
import * as path from "node:path";
import { useFixture, type Fixture } from "./fixture";
import { runCommand } from "./workbench";

let f: Fixture;
const KEY = "sk-kept-in-secret-storage-4242";

const { test } = useFixture(
  {
    name: "setup",
    trust: true,
    files: { "app.py": "print('hi')\n" },
    env: (env) => {
      const { OPENAI_API_KEY: _dropped, ...rest } = env;
      return { ...rest, HERMES_ACP_MODELS: "gpt-4.1,gpt-4.1-mini" }; // the picker's choices
    },
  },
  (started) => (f = started),
);

/** Every file under `dir` that contains `text`. */
function filesContaining(dir: string, text: string): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(dir, { recursive: true, encoding: "utf8" })) {
    const file = path.join(dir, entry);
    try {
      if (statSync(file).isFile() && statSync(file).size < 5_000_000 && readFileSync(file, "latin1").includes(text)) found.push(file);
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

test("in Restricted Mode the agent does not start, and the view says why", async () => {
  await runCommand(f.page, "Hermes: Open chat");
  const notice = f.chat.locator(".error", { hasText: "Restricted Mode" });
  await notice.waitFor();
  await f.chat.locator('#status[data-state="stopped"]').waitFor();
  assert.deepEqual(f.agentPids(), []);
  await notice.locator('button[data-action="trust"]').waitFor();
  await f.shot("restricted-mode");
});

test("trusting the folder starts the agent; with no key it says so once and is not 'ready'", async () => {
  await f.chat.locator('button[data-action="trust"]').click();
  await f.page.getByRole("button", { name: "Trust", exact: true }).first().click();
  const noKey = f.chat.locator(".error", { hasText: "no API key" });
  await noKey.waitFor();
  await f.chat.locator('#status[data-state="error"]').waitFor();
  assert.equal(await noKey.count(), 1);
  assert.equal(await f.chat.locator('#status[data-state="ready"]').count(), 0);
  await f.shot("no-api-key");
});

test("the set-up in VS Code: the key goes to secret storage and to the agent (never to settings), then the model is picked from the agent's list", async () => {
  await f.chat.locator('.error button[data-action="setup"]').click();
  const input = f.page.locator(".quick-input-widget input");
  await f.page.locator(".quick-input-list .monaco-list-row", { hasText: "OpenAI" }).first().click();
  await f.page.locator(".quick-input-widget", { hasText: "OpenAI API key" }).waitFor();
  assert.equal(await input.getAttribute("type"), "password");
  await input.fill(KEY);
  await f.page.keyboard.press("Enter");
  // Then the model, from the session's model option.
  const models = f.page.locator(".quick-input-widget", { hasText: "which model?" });
  await models.waitFor();
  await f.shot("model-pick");
  await models.locator(".quick-input-list .monaco-list-row", { hasText: "gpt-4.1-mini" }).click();
  await f.chat.locator('select[data-config-id="model"] option[value="gpt-4.1-mini"]:checked').waitFor({ state: "attached" });
  await f.chat.locator('#status[data-state="ready"]').waitFor();
  await f.fake.script([{ text: "Hello with a key." }]);
  await f.chat.locator("#input").fill("Hello?");
  await f.chat.locator("#input").press("Enter");
  await f.chat.getByText("Hello with a key.").waitFor();
  const { headers, last } = await f.fake.requests();
  assert.equal(headers?.authorization, `Bearer ${KEY}`);
  assert.equal((last as { model: string }).model, "gpt-4.1-mini", "the model picked is the one asked");
  assert.deepEqual(filesContaining(path.dirname(f.userSettings), KEY).filter((file) => file.endsWith(".json")), []);
  assert.deepEqual(filesContaining(f.project, KEY), []);
  await f.shot("key-set-up");
});
