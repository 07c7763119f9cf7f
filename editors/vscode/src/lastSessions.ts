import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import * as path from "node:path";

/**
 * The session each workspace folder last showed, in a file in the extension's storage folder.
 *
 * Why a file: `workspaceState` lives in the window's storage, and in a browser window
 * (code-server) a write still on its way there is lost when the window reloads, so a reload
 * right after opening a past session came back to the one before. The file is on disk when
 * `remember` resolves, and the view is told of the session only then.
 */
export class LastSessions {
  private writing: Promise<void> = Promise.resolve();

  constructor(private readonly dir: string) {}

  get file(): string {
    return path.join(this.dir, "last-sessions.json");
  }

  async get(folder: string): Promise<string | undefined> {
    const sessionId = (await this.readAll())[folder];
    return typeof sessionId === "string" ? sessionId : undefined;
  }

  /** Resolves once the file holds it. Writes run in call order, so the last choice stays. */
  remember(folder: string, sessionId: string): Promise<void> {
    const write = (): Promise<void> => this.write(folder, sessionId);
    this.writing = this.writing.then(write, write);
    return this.writing;
  }

  private async readAll(): Promise<Record<string, unknown>> {
    try {
      const data: unknown = JSON.parse(await readFile(this.file, "utf8"));
      return data && typeof data === "object" && !Array.isArray(data) ? (data as Record<string, unknown>) : {};
    } catch {
      return {}; // none yet, or unreadable: nothing to come back to
    }
  }

  private async write(folder: string, sessionId: string): Promise<void> {
    const all = { ...(await this.readAll()), [folder]: sessionId };
    await mkdir(this.dir, { recursive: true });
    // A reload can stop the extension host mid-write: the rename keeps the old file or the new.
    const temp = `${this.file}.${process.pid}.tmp`;
    await writeFile(temp, JSON.stringify(all));
    await rename(temp, this.file);
  }
}
