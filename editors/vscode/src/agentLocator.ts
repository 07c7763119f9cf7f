import * as fs from "node:fs";
import * as path from "node:path";

/** How to start the agent: the command line and the extra environment. */
export interface AgentCommand {
  command: string;
  args: string[];
  env: Record<string, string>;
  /** Where the command came from, for messages ("setting", "PATH", "workspace .venv"). */
  source: string;
}

export interface AgentSettings {
  command?: string;
  args?: string[];
  env?: Record<string, string>;
}

export const INSTALL_HELP =
  "Hermes (hermes-acp) was not found. Install it with " +
  "`python3 -m venv .venv && .venv/bin/pip install hermes-acp-agent` in your workspace, " +
  "or set `hermes.command` to the absolute path of `hermes-acp`.";

function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

/** The first executable `name` on a PATH-style list of folders. */
export function findOnPath(name: string, pathList: string | undefined): string | undefined {
  for (const dir of (pathList ?? "").split(path.delimiter)) {
    if (dir && isExecutable(path.join(dir, name))) {
      return path.join(dir, name);
    }
  }
  return undefined;
}

/**
 * The agent to start: the `hermes.command` setting, else `hermes-acp` on PATH, else the
 * first workspace folder's `.venv/bin/hermes-acp`. Undefined when there is none.
 */
export function locateAgent(
  settings: AgentSettings,
  workspaceFolders: readonly string[],
  pathList: string | undefined = process.env.PATH,
): AgentCommand | undefined {
  const args = settings.args && settings.args.length > 0 ? settings.args : ["--stdio"];
  const env = settings.env ?? {};
  if (settings.command && settings.command.trim() !== "") {
    return { command: settings.command, args, env, source: "setting hermes.command" };
  }
  const onPath = findOnPath("hermes-acp", pathList);
  if (onPath) {
    return { command: onPath, args, env, source: "PATH" };
  }
  for (const folder of workspaceFolders) {
    const candidate = path.join(folder, ".venv", "bin", "hermes-acp");
    if (isExecutable(candidate)) {
      return { command: candidate, args, env, source: "workspace .venv" };
    }
  }
  return undefined;
}
