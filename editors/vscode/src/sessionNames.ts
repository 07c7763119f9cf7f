import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import * as path from "node:path";
import type { SessionInfo } from "@agentclientprotocol/sdk";

interface Stored {
  /** Names the user gave sessions: ACP has no way to rename a session on the agent. */
  names: Record<string, string>;
  /** Sessions removed from the list where the agent could not delete them. */
  hidden: string[];
}

/**
 * What the user changed about the session list that the agent does not keep: names, and
 * sessions hidden when the agent has no `session/delete`. A file in the extension's storage.
 */
export class SessionNames {
  private writing: Promise<void> = Promise.resolve();

  constructor(private readonly dir: string) {}

  get file(): string {
    return path.join(this.dir, "session-names.json");
  }

  /** The agent's list with the user's names, without the hidden sessions. */
  async apply(sessions: SessionInfo[]): Promise<SessionInfo[]> {
    const stored = await this.read();
    return sessions
      .filter((info) => !stored.hidden.includes(info.sessionId))
      .map((info) => ({ ...info, title: stored.names[info.sessionId] ?? typedTitle(info.title) }));
  }

  rename(sessionId: string, name: string): Promise<void> {
    return this.change((stored) => {
      if (name.trim()) stored.names[sessionId] = name.trim();
      else delete stored.names[sessionId];
    });
  }

  hide(sessionId: string): Promise<void> {
    return this.change((stored) => {
      if (!stored.hidden.includes(sessionId)) stored.hidden.push(sessionId);
    });
  }

  /** Forget a deleted session's name. */
  forget(sessionId: string): Promise<void> {
    return this.change((stored) => {
      delete stored.names[sessionId];
    });
  }

  private async read(): Promise<Stored> {
    try {
      const data = JSON.parse(await readFile(this.file, "utf8")) as Partial<Stored>;
      const names = data.names && typeof data.names === "object" && !Array.isArray(data.names) ? data.names : {};
      const hidden = Array.isArray(data.hidden) ? data.hidden.filter((id): id is string => typeof id === "string") : [];
      return { names: Object.fromEntries(Object.entries(names).filter(([, name]) => typeof name === "string")), hidden };
    } catch {
      return { names: {}, hidden: [] };
    }
  }

  /** Changes run in call order; the rename keeps the old file or the new if a reload stops a write. */
  private change(edit: (stored: Stored) => void): Promise<void> {
    const write = async (): Promise<void> => {
      const stored = await this.read();
      edit(stored);
      await mkdir(this.dir, { recursive: true });
      const temp = `${this.file}.${process.pid}.tmp`;
      await writeFile(temp, JSON.stringify(stored));
      await rename(temp, this.file);
    };
    this.writing = this.writing.then(write, write);
    return this.writing;
  }
}

/**
 * The agent titles a session after its first prompt, attached files included (`<file uri=…>`
 * as it wraps them): the title shown is what the user typed.
 */
export function typedTitle(title: string | null | undefined): string | null | undefined {
  if (!title) return title;
  const cut = title.search(/\s*<(?:file|resource)\b|\s*\[Attached /);
  return cut > 0 ? title.slice(0, cut).trim() : title;
}
