import type { ToView } from "./protocol";

/** The most messages a replay keeps; past it the oldest of the thread go, a quarter at a time. */
export const MAX_REPLAY = 4000;
/** The most characters of one terminal's output a replay keeps (the tail). */
export const MAX_TERMINAL_REPLAY = 100_000;

export const DROPPED_NOTICE = "Earlier messages of this conversation are not shown again here.";

/** Kinds where only the latest message counts: each replaces what the one before showed. */
const LATEST_ONLY = new Set<ToView["type"]>(["state", "session", "commands", "sessions", "files", "attachments"]);

/**
 * What a re-created chat view is sent to show the conversation again (the webview starts
 * empty each time VS Code re-creates it). Compacted as it grows: text chunks of one message
 * and a terminal's output become one message each, and of the kinds that replace their
 * predecessor only the latest stays; then bounded to `MAX_REPLAY` messages by dropping the
 * oldest of the thread. A permission still waiting for its answer is never dropped: the
 * user answers it in the view.
 */
export class ViewHistory {
  private messages: ToView[] = [];
  private readonly unsettled = new Set<string>();
  private dropped = false;

  constructor(private readonly limit: number = MAX_REPLAY) {}

  add(message: ToView): void {
    if (message.type === "clear") {
      this.messages = [message];
      this.unsettled.clear();
      this.dropped = false;
      return;
    }
    if (message.type === "permission") this.unsettled.add(message.id);
    if (message.type === "permissionSettled") this.unsettled.delete(message.id);
    const last = this.messages.at(-1);
    if (last && appendTo(last, message)) return;
    if (LATEST_ONLY.has(message.type)) {
      this.messages = this.messages.filter((kept) => kept.type !== message.type);
    }
    // A copy: merging into it later must not change the message already posted.
    this.messages.push({ ...message });
    if (this.messages.length > this.limit) this.dropOldest();
  }

  /** The messages to post to a new view, in order. */
  replay(): ToView[] {
    // Copies: a chunk merged into the history while they wait must not reach the view twice.
    const messages = this.messages.map((message) => ({ ...message }));
    if (!this.dropped) return messages;
    const [head, ...rest] = messages;
    const notice: ToView = { type: "notice", message: DROPPED_NOTICE };
    return head?.type === "clear" ? [head, notice, ...rest] : [notice, ...messages];
  }

  private dropOldest(): void {
    let excess = this.messages.length - Math.floor((this.limit * 3) / 4);
    this.messages = this.messages.filter((message, index) => {
      const keep = excess <= 0 || (index === 0 && message.type === "clear") || LATEST_ONLY.has(message.type) || (message.type === "permission" && this.unsettled.has(message.id));
      if (!keep) excess -= 1;
      return keep;
    });
    this.dropped = true;
  }
}

/** Merges `next` into `last` (a copy the history owns) when the view shows them as one. */
function appendTo(last: ToView, next: ToView): boolean {
  if (last.type === "terminalOutput" && next.type === "terminalOutput" && last.terminalId === next.terminalId) {
    last.text = (last.text + next.text).slice(-MAX_TERMINAL_REPLAY);
    return true;
  }
  return mergeChunks(last, next);
}

const TEXT_CHUNKS = new Set(["agent_message_chunk", "agent_thought_chunk", "user_message_chunk"]);

/**
 * Appends `next` to `last` when both are text chunks of the same message (same kind, same
 * messageId, no `_meta`), so the view renders them as it would have one after the other.
 */
export function mergeChunks(last: ToView, next: ToView): boolean {
  if (last.type !== "update" || next.type !== "update") return false;
  const a = last.update;
  const b = next.update;
  if (!TEXT_CHUNKS.has(a.sessionUpdate) || a.sessionUpdate !== b.sessionUpdate) return false;
  if (!("content" in a) || !("content" in b) || a._meta || b._meta) return false;
  const aContent = a.content as { type: string; text?: string };
  const bContent = b.content as { type: string; text?: string };
  if (aContent.type !== "text" || bContent.type !== "text") return false;
  const aId = (a as { messageId?: string | null }).messageId ?? null;
  const bId = (b as { messageId?: string | null }).messageId ?? null;
  if (aId !== bId) return false;
  // A status line (retrying …) arrives as its own thought chunk and is shown apart.
  if (a.sessionUpdate === "agent_thought_chunk" && (/^\s*_[^\n]+_\s*$/.test(aContent.text ?? "") || /^\s*_[^\n]+_\s*$/.test(bContent.text ?? ""))) return false;
  last.update = { ...a, content: { ...aContent, text: (aContent.text ?? "") + (bContent.text ?? "") } } as typeof a;
  return true;
}
