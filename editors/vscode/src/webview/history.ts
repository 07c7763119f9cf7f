import type { SessionInfo } from "@agentclientprotocol/sdk";
import type { FromView } from "../protocol";
import { inWords } from "../relativeTime";
import { h } from "./dom";

type Post = (message: FromView) => void;

/** The past sessions panel: search by title, open, rename, delete; dates in words. */
export class History {
  private readonly search = h("input", { id: "session-search", type: "search", placeholder: "Search sessions", "aria-label": "Search past sessions" });
  private readonly list = h("div", { className: "session-list", role: "list" });
  private sessions: SessionInfo[] = [];
  /** The user asked for the list (History): a list that arrives otherwise only refreshes an open panel. */
  requested = false;

  constructor(
    private readonly box: HTMLElement,
    private readonly post: Post,
  ) {
    this.search.addEventListener("input", () => this.render());
    this.search.addEventListener("keydown", (event) => {
      if (event.key === "Escape") box.hidden = true;
    });
  }

  show(sessions: SessionInfo[]): void {
    this.sessions = sessions;
    const opening = this.box.hidden;
    if (opening && !this.requested) return;
    this.requested = false;
    this.box.hidden = false;
    if (!this.box.contains(this.search)) this.box.replaceChildren(this.search, this.list);
    this.render();
    if (opening && sessions.length > 0) this.search.focus();
  }

  private render(): void {
    const query = this.search.value.trim().toLowerCase();
    const shown = this.sessions.filter((info) => !query || (info.title ?? "").toLowerCase().includes(query));
    this.search.hidden = this.sessions.length === 0;
    if (shown.length === 0) {
      this.list.replaceChildren(h("div", { className: "empty" }, this.sessions.length === 0 ? "No past sessions in this folder." : `No session matches “${this.search.value.trim()}”.`));
      return;
    }
    const now = new Date();
    this.list.replaceChildren(
      ...shown.map((info) => {
        const title = info.title ?? "(untitled)";
        const updated = info.updatedAt ? new Date(info.updatedAt) : undefined;
        return h(
          "div",
          { className: "session-row", role: "listitem" },
          h(
            "button",
            { className: "session", "data-session-id": info.sessionId, onclick: () => ((this.box.hidden = true), this.post({ type: "loadSession", sessionId: info.sessionId })) },
            h("span", { className: "title" }, title),
            h("span", { className: "date", title: updated ? updated.toLocaleString() : "" }, updated ? inWords(updated, now) : ""),
          ),
          h("button", { className: "rename", title: "Rename", "aria-label": `Rename “${title}”`, onclick: () => this.post({ type: "renameSession", sessionId: info.sessionId }) }, "✎"),
          h("button", { className: "delete", title: "Delete", "aria-label": `Delete “${title}”`, onclick: () => this.post({ type: "deleteSession", sessionId: info.sessionId }) }, "✕"),
        );
      }),
    );
  }
}
