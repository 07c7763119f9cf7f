import * as vscode from "vscode";

/** The providers whose key the set-up asks for, and the variable the agent reads it from. */
export const PROVIDERS = [
  { provider: "openai", label: "OpenAI", variable: "OPENAI_API_KEY" },
  { provider: "anthropic", label: "Anthropic", variable: "ANTHROPIC_API_KEY" },
  { provider: "openrouter", label: "OpenRouter", variable: "OPENROUTER_API_KEY" },
] as const;

const SECRET_PREFIX = "hermes.apiKey.";
const PROVIDER_KEY = "hermes.provider";

/**
 * API keys live in VS Code's SecretStorage (the OS keychain where there is one), never in
 * settings.json; the agent gets them in its environment when it starts.
 */
export class ApiKeys {
  constructor(
    private readonly secrets: vscode.SecretStorage,
    private readonly state: vscode.Memento,
  ) {}

  /** The environment the stored keys (and the provider chosen with them) give the agent. */
  async environment(): Promise<Record<string, string>> {
    const env: Record<string, string> = {};
    for (const { variable } of PROVIDERS) {
      const key = await this.secrets.get(SECRET_PREFIX + variable);
      if (key) env[variable] = key;
    }
    const provider = this.state.get<string>(PROVIDER_KEY);
    if (provider && Object.keys(env).length > 0) env.HERMES_ACP_PROVIDER = provider;
    return env;
  }

  /** Asks for a provider and its key; true when a key was stored. */
  async ask(): Promise<boolean> {
    const picked = await vscode.window.showQuickPick(
      PROVIDERS.map((entry) => ({ label: entry.label, description: entry.variable, entry })),
      { title: "Hermes: which provider's API key?", placeHolder: "The key is kept in VS Code's secret storage" },
    );
    if (!picked) return false;
    const key = await vscode.window.showInputBox({
      title: `Hermes: ${picked.entry.label} API key`,
      prompt: "Stored in VS Code's secret storage and given to the agent in its environment; never written to settings.",
      password: true,
      ignoreFocusOut: true,
      validateInput: (value) => (value.trim() ? undefined : "The key is empty."),
    });
    if (!key?.trim()) return false;
    await this.secrets.store(SECRET_PREFIX + picked.entry.variable, key.trim());
    await this.state.update(PROVIDER_KEY, picked.entry.provider);
    return true;
  }
}
