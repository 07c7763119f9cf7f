/**
 * The files the agent changed and the user has not decided on yet: each with its text
 * before the agent's first write, so Undo can put it back (or delete a file the agent
 * created) and Keep just forgets it. No VS Code API here: the host gives the file access.
 */
import type { ChangedFile } from "./protocol";
import { lineChanges } from "./textEdits";

/** Reading and restoring files as the user sees them (open buffers included). */
export interface FileAccess {
  /** The text now, or undefined when there is no such file. */
  read(path: string): Promise<string | undefined>;
  /** Puts `text` back (buffer and disk); undefined deletes the file. */
  restore(path: string, text: string | undefined): Promise<void>;
  /** The file's text on disk (an open buffer may not have caught up with a change there yet). */
  readDisk(path: string): Promise<string | undefined>;
}

interface Change {
  /** Undefined: the file did not exist before the agent wrote it. */
  before: string | undefined;
  after: string;
}

export class TurnChanges {
  private readonly changes = new Map<string, Change>();

  constructor(
    private readonly files: FileAccess,
    private readonly changed: (list: ChangedFile[]) => void,
  ) {}

  /** Writes of one path, one after the other: the first's "before" must be read before the
   * second writes. */
  private readonly writing = new Map<string, Promise<void>>();

  /** Runs the agent's write of `path`, remembering what the file held before the first one. */
  write(path: string, content: string, write: () => Promise<void>): Promise<void> {
    const previous = this.writing.get(path) ?? Promise.resolve();
    const next = previous.catch(() => undefined).then(() => this.record(path, content, write));
    const settled = next.catch(() => undefined);
    this.writing.set(path, settled);
    void settled.then(() => {
      if (this.writing.get(path) === settled) this.writing.delete(path);
    });
    return next;
  }

  private async record(path: string, content: string, write: () => Promise<void>): Promise<void> {
    const known = this.changes.get(path);
    const before = known ? known.before : await this.files.read(path);
    await write();
    if (before === content) {
      this.changes.delete(path); // written back to what it was: nothing to decide
    } else {
      this.changes.set(path, { before, after: content });
    }
    this.publish();
  }

  list(): ChangedFile[] {
    return [...this.changes].map(([path, change]) => ({ path, created: change.before === undefined, ...lineChanges(change.before ?? "", change.after) }));
  }

  publish(): void {
    this.changed(this.list());
  }

  keep(path: string): void {
    if (this.changes.delete(path)) this.publish();
  }

  keepAll(): void {
    this.changes.clear();
    this.publish();
  }

  /**
   * Puts `path` back as it was before the agent changed it. When the user changed it since
   * (the text is not what the agent wrote), `confirm` decides: their edits would be lost.
   * Returns whether it was restored.
   */
  async undo(path: string, confirm: (path: string) => Promise<boolean>): Promise<boolean> {
    const change = this.changes.get(path);
    if (!change) return false;
    const now = await this.files.read(path);
    if (now !== change.before) {
      if (now !== change.after && !(await confirm(path))) return false;
      await this.files.restore(path, change.before);
    }
    this.changes.delete(path);
    this.publish();
    return true;
  }

  /** Undo of every file; those the user declines to overwrite stay listed. */
  async undoAll(confirm: (path: string) => Promise<boolean>): Promise<void> {
    for (const path of [...this.changes.keys()]) {
      await this.undo(path, confirm);
    }
  }

  /** Files that the agent's rewind put back on disk: nothing left to decide there. */
  async forgetRestored(): Promise<void> {
    for (const [path, change] of [...this.changes]) {
      if ((await this.files.readDisk(path)) === change.before) this.changes.delete(path);
    }
    this.publish();
  }
}
