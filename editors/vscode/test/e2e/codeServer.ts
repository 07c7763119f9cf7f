/** A real VS Code: code-server 4.100.3 with our .vsix installed, on a free local port. */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import * as path from "node:path";

export interface CodeServer {
  url: string;
  process: ChildProcess;
  stop(): Promise<void>;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => (typeof address === "object" && address ? resolve(address.port) : reject(new Error("no port"))));
    });
  });
}

export async function startCodeServer(options: {
  binary: string;
  vsix: string;
  root: string;
  folder: string;
  settings: Record<string, unknown>;
  /** Keep workspace trust on (the default here turns it off). */
  trust?: boolean;
  log: (text: string) => void;
}): Promise<CodeServer> {
  const extensions = path.join(options.root, "extensions");
  const data = path.join(options.root, "data");
  const tmp = path.join(options.root, "tmp");
  for (const dir of [extensions, path.join(data, "User"), tmp]) mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(data, "User", "settings.json"), JSON.stringify(options.settings, null, 2));
  const config = path.join(options.root, "config.yaml");
  writeFileSync(config, "auth: none\n");
  const env = { ...process.env, TMPDIR: tmp };
  const installed = spawnSync(options.binary, ["--install-extension", options.vsix, "--extensions-dir", extensions, "--user-data-dir", data, "--config", config], { env, encoding: "utf8" });
  if (installed.status !== 0) throw new Error(`installing the .vsix failed: ${installed.stderr}${installed.stdout}`);
  const port = await freePort();
  const child = spawn(
    options.binary,
    ["--config", config, "--auth", "none", "--bind-addr", `127.0.0.1:${port}`, "--disable-telemetry", "--disable-update-check",
      ...(options.trust ? [] : ["--disable-workspace-trust"]), "--extensions-dir", extensions, "--user-data-dir", data, options.folder],
    { env, stdio: ["ignore", "pipe", "pipe"] },
  );
  let exited = false;
  const gone = new Promise<void>((resolve) => child.on("exit", () => ((exited = true), resolve())));
  // It says when it listens; waiting for that line is waiting on the event itself.
  await new Promise<void>((resolve, reject) => {
    let seen = "";
    const watch = (chunk: Buffer): void => {
      options.log(chunk.toString());
      seen += chunk.toString();
      if (seen.includes("HTTP server listening on")) resolve();
    };
    child.stdout?.on("data", watch);
    child.stderr?.on("data", watch);
    void gone.then(() => reject(new Error(`code-server exited during start-up:\n${seen}`)));
  });
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    process: child,
    stop: async () => {
      if (!exited) child.kill("SIGTERM");
      await gone;
    },
  };
}
