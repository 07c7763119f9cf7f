import * as vscode from "vscode";
import type { AgentSettings } from "./agentLocator";

/** The settings that say what runs: only the user's own values count, never a workspace's. */
export const AGENT_SETTINGS = ["command", "args", "env"] as const;

/**
 * `hermes.command`, `hermes.args` and `hermes.env` from the user's settings (or their
 * defaults). They are machine-scoped in package.json, so VS Code already ignores them in a
 * workspace's `.vscode/settings.json`; reading the user value alone keeps that true even if a
 * VS Code version or a mis-declared scope would let the workspace value through, since the
 * agent (or the file tools it drives) can write that file.
 */
export function userAgentSettings(): AgentSettings {
  const config = vscode.workspace.getConfiguration("hermes");
  const user = <T>(key: (typeof AGENT_SETTINGS)[number]): T | undefined => {
    const seen = config.inspect<T>(key);
    return seen?.globalValue ?? seen?.defaultValue;
  };
  return { command: user<string>("command"), args: user<string[]>("args"), env: user<Record<string, string>>("env") };
}

/** Whether a configuration change touches what starts the agent. */
export function touchesAgent(event: vscode.ConfigurationChangeEvent): boolean {
  return AGENT_SETTINGS.some((key) => event.affectsConfiguration(`hermes.${key}`));
}
