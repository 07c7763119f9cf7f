import type {
  ContentBlock,
  PlanEntry,
  RequestPermissionRequest,
  SessionUpdate,
  ToolCallContent,
  ToolCallLocation,
} from "@agentclientprotocol/sdk";
import type { FromView } from "../protocol";
import { h } from "./dom";
import { lineChanges } from "../textEdits";
import { addCopyButtons, linkFileReferences, renderMarkdown, type CodeButtons } from "./markdown";
import { permissionDetail } from "./permissionDetail";

type Post = (message: FromView) => void;

interface StreamedBlock {
  kind: "agent" | "thought" | "user";
  element: HTMLElement;
  body: HTMLElement;
  text: string;
  pending: boolean;
  /** The ACP messageId of its chunks: a new id starts a new message. */
  messageId?: string | null;
}

/** Renders the thread: messages, thoughts, tool-call cards, permission cards, terminals. */
export class Thread {
  private current: StreamedBlock | undefined;
  private readonly toolCards = new Map<string, HTMLElement>();
  private readonly terminalText = new Map<string, string>();
  private readonly permissionCards = new Map<string, HTMLElement>();
  /** The session's folder: paths under it are shown relative. */
  cwd = "";
  /** The newest error box's text, while it is the newest thing in the thread. */
  lastError: string | undefined;
  /** The user is at the bottom: new content keeps them there. Scrolling up stops that. */
  private stick = true;

  constructor(
    private readonly root: HTMLElement,
    private readonly plan: HTMLElement,
    private readonly usage: HTMLElement,
    private readonly post: Post,
    private readonly jump?: HTMLButtonElement,
  ) {
    root.addEventListener("scroll", () => {
      this.stick = root.scrollHeight - root.scrollTop - root.clientHeight < 24;
      if (this.stick && this.jump) this.jump.hidden = true;
    });
    jump?.addEventListener("click", () => {
      this.stick = true;
      jump.hidden = true;
      this.root.scrollTop = this.root.scrollHeight;
    });
  }

  /** Example prompts for an empty thread; a click puts one in the input. */
  examples: ((text: string) => void) | undefined;

  clear(): void {
    this.root.replaceChildren();
    this.showEmptyState();
    this.lastError = undefined;
    this.stick = true;
    if (this.jump) this.jump.hidden = true;
    this.current = undefined;
    this.toolCards.clear();
    this.permissionCards.clear();
    this.plan.hidden = true;
    this.usage.hidden = true;
  }

  private showEmptyState(): void {
    const prompts = ["Explain what this project does and where to start reading", "Find and fix the failing test", "Add a unit test for the current file"];
    this.root.append(
      h(
        "div",
        { className: "empty-state" },
        h("p", {}, "Ask Hermes to read, change or run things in this folder. Type / for commands, @ to attach a file."),
        ...prompts.map((text) => h("button", { className: "example", onclick: () => this.examples?.(text) }, text)),
      ),
    );
  }

  private append(node: HTMLElement): void {
    this.root.querySelector(".empty-state")?.remove();
    this.lastError = undefined;
    this.root.append(node);
    this.follow();
  }

  userMessage(text: string): void {
    this.current = undefined;
    this.stick = true; // the user just sent: show what comes
    this.append(h("div", { className: "message user", role: "article", "aria-label": "You" }, h("div", { className: "body" }, text)));
  }

  notice(text: string, className = "notice"): HTMLElement {
    this.current = undefined;
    const element = h("div", { className }, text);
    this.append(element);
    return element;
  }

  /** An error box (Markdown: the agent's messages name commands in backticks). */
  error(text: string): HTMLElement {
    this.current = undefined;
    const element = h("div", { className: "error", role: "alert" });
    const body = h("span", { className: "text" });
    body.innerHTML = renderMarkdown(text).replace(/^<p>|<\/p>\n?$/g, "");
    element.append(body);
    this.append(element);
    this.lastError = text;
    return element;
  }

  update(update: SessionUpdate): void {
    switch (update.sessionUpdate) {
      case "agent_message_chunk": {
        // The agent marks a failed model call (an endpoint down) apart from an answer.
        const failure = (update._meta as { hermes?: { turnError?: { message?: string } } } | undefined)?.hermes?.turnError;
        if (failure) {
          const box = this.error(`The model provider failed: ${failure.message ?? "unknown error"}`);
          box.append(" ", h("button", { className: "action retry", "data-action": "retry", onclick: () => this.post({ type: "retry" }) }, "Retry"));
          return;
        }
        return this.stream("agent", update.content, update.messageId);
      }
      case "agent_thought_chunk":
        // A status line (retrying, a notice) is for the user to see, not a hidden thought: the
        // agent marks it `_meta.hermes.status` (older agents sent one italic line).
        if (update.content.type === "text") {
          const status = (update._meta as { hermes?: { status?: unknown } } | null | undefined)?.hermes?.status;
          const italic = /^\s*_[^\n]+_\s*$/.test(update.content.text);
          if (status || italic) {
            const text = update.content.text.trim();
            this.notice((italic ? text.slice(1, -1) : text).replace(/\\(.)/g, "$1"), "notice visible status-line");
            return;
          }
        }
        return this.stream("thought", update.content, update.messageId);
      case "user_message_chunk":
        return this.stream("user", update.content, update.messageId);
      case "tool_call":
        this.current = undefined;
        return this.toolCard(update.toolCallId, update);
      case "tool_call_update":
        return this.toolCard(update.toolCallId, update);
      case "plan":
        return this.showPlan(update.entries);
      case "usage_update":
        return this.showUsage(update.used, update.size, update.cost?.amount, update.cost?.currency);
      default:
        return;
    }
  }

  private stream(kind: StreamedBlock["kind"], content: ContentBlock, messageId?: string | null): void {
    const text =
      content.type === "text"
        ? content.text
        : content.type !== "resource_link"
          ? ""
          : kind === "user"
            ? attachedFile(content.uri) // a replayed prompt's file: a chip, as the live one showed it
            : `[${content.name}](${content.uri})`;
    // A message the agent says beside the streamed answer (a /steer's reply) has an id of its own.
    const another = !!messageId && !!this.current?.messageId && messageId !== this.current.messageId;
    if (!this.current || this.current.kind !== kind || another) {
      const body = h("div", { className: "body" });
      const element =
        kind === "thought"
          ? h("details", { className: "thought" }, h("summary", {}, "Thinking"), body)
          : h("div", { className: `message ${kind}`, role: "article", "aria-label": kind === "user" ? "You" : "Hermes" }, body);
      this.current = { kind, element, body, text: "", pending: false, messageId };
      this.append(element);
    }
    const block = this.current;
    block.text += text;
    if (!block.pending) {
      // One render per frame, however many chunks arrive in it.
      block.pending = true;
      requestAnimationFrame(() => {
        block.pending = false;
        if (kind === "user") {
          block.body.replaceChildren(...this.userText(block.text));
        } else {
          block.body.innerHTML = renderMarkdown(block.text);
        }
        addCopyButtons(block.body, this.codeButtons());
        if (kind === "agent") linkFileReferences(block.body, (path, line) => this.post({ type: "open", path, line }));
        this.follow();
      });
    }
  }

  /** Copy, Insert, Apply and New file on an answer's code blocks. */
  private codeButtons(): CodeButtons {
    return {
      copy: (text) => this.post({ type: "copy", text }),
      action: (action, code, language, path) => this.post({ type: "codeAction", action, code, language, path }),
    };
  }

  private toolCard(
    id: string,
    fields: {
      title?: string | null;
      kind?: string | null;
      status?: string | null;
      locations?: ToolCallLocation[] | null;
      content?: ToolCallContent[] | null;
    },
  ): void {
    let card = this.toolCards.get(id);
    if (!card) {
      card = h(
        "details",
        { className: "tool", "data-tool-call-id": id, open: true },
        h("summary", {}, h("span", { className: "status" }), h("span", { className: "kind" }), h("span", { className: "title" })),
        h("div", { className: "locations" }),
        h("div", { className: "content" }),
      );
      this.toolCards.set(id, card);
      this.current = undefined;
      this.append(card);
    }
    const part = (name: string): HTMLElement => card!.querySelector(`.${name}`) as HTMLElement;
    if (fields.title) part("title").textContent = fields.title;
    if (fields.kind) part("kind").textContent = fields.kind;
    if (fields.status) {
      part("status").textContent = fields.status.replace("_", " ");
      card.dataset.status = fields.status;
    }
    if (fields.locations) {
      part("locations").replaceChildren(
        ...fields.locations.map((location) =>
          h(
            "a",
            { href: "#", className: "location", onclick: (event: Event) => (event.preventDefault(), this.post({ type: "open", path: location.path, line: location.line })) },
            `${this.shortPath(location.path)}${location.line ? `:${location.line}` : ""}`,
          ),
        ),
      );
    }
    if (fields.content) {
      part("content").replaceChildren(...fields.content.map((item) => this.toolContent(item)));
    }
    this.follow();
  }

  /** Keeps the newest content in sight while the user is at the bottom; else offers a jump. */
  private follow(): void {
    if (this.stick) {
      this.root.scrollTop = this.root.scrollHeight;
    } else if (this.jump) {
      this.jump.hidden = false;
    }
  }

  private toolContent(item: ToolCallContent): HTMLElement {
    if (item.type === "terminal") {
      const pre = h("pre", { className: "terminal", "data-terminal-id": item.terminalId }, this.terminalText.get(item.terminalId) ?? "");
      return pre;
    }
    if (item.type === "diff") {
      const { added, removed } = lineChanges(item.oldText ?? "", item.newText);
      return h(
        "div",
        { className: "diff", "aria-label": `${this.shortPath(item.path)}: ${added} lines added, ${removed} removed` },
        `${this.shortPath(item.path)}${item.oldText == null ? " (new file)" : ""} `,
        h("span", { className: "added" }, `+${added}`),
        " ",
        h("span", { className: "removed" }, `−${removed}`),
      );
    }
    const block = item.content;
    const div = h("div", { className: "markdown" });
    div.innerHTML = renderMarkdown(block.type === "text" ? block.text : "");
    return div;
  }

  /**
   * A user message as the user wrote it: a file the prompt carried (`<file uri=…>…</file>`, as
   * a replay gives it back) is a chip with its name, not its whole text.
   */
  private userText(text: string): Array<Node | string> {
    const out: Array<Node | string> = [];
    const attached = /\n?<(file|resource) uri="([^"]*)"(?: lines="([^"]*)")?>\n[\s\S]*?<\/\1>\n?/g;
    let last = 0;
    for (const match of text.matchAll(attached)) {
      out.push(text.slice(last, match.index));
      const uri = match[2]!.replace(/&quot;/g, '"').replace(/&amp;/g, "&");
      let name = uri;
      let lines = match[3];
      try {
        const url = new URL(uri);
        name = decodeURIComponent(url.pathname);
        const range = /^#L(\d+)(?:-L?(\d+))?$/.exec(url.hash); // a selection sent along
        if (range && !lines) lines = range[2] ? `${range[1]}-${range[2]}` : range[1];
      } catch {
        // not a URL: show it as it is
      }
      const label = `${this.shortPath(name)}${lines ? `:${lines}` : ""}`;
      out.push(h("span", { className: "chip attached", title: uri }, label));
      last = match.index + match[0].length;
    }
    out.push(text.slice(last));
    return out.filter((part) => part !== "");
  }

  private shortPath(file: string): string {
    const prefix = this.cwd.endsWith("/") ? this.cwd : `${this.cwd}/`;
    return this.cwd && file.startsWith(prefix) ? file.slice(prefix.length) : file;
  }

  terminalOutput(terminalId: string, text: string): void {
    const all = (this.terminalText.get(terminalId) ?? "") + text;
    this.terminalText.set(terminalId, all);
    for (const pre of Array.from(this.root.querySelectorAll<HTMLElement>(`pre[data-terminal-id="${CSS.escape(terminalId)}"]`))) {
      pre.textContent = all;
      pre.scrollTop = pre.scrollHeight;
    }
    this.follow();
  }

  terminalExit(terminalId: string, exitCode: number | null, signal: string | null): void {
    this.terminalOutput(terminalId, `\n[${signal ? `killed (${signal})` : `exit ${exitCode}`}]`);
  }

  permission(id: string, request: RequestPermissionRequest, reviewable: boolean): void {
    this.current = undefined;
    const buttons = request.options.map((option) =>
      h("button", { className: `option ${option.kind}`, "data-option-id": option.optionId, onclick: () => this.post({ type: "permission", id, optionId: option.optionId }) }, option.name),
    );
    const review = reviewable ? h("button", { className: "review", onclick: () => this.post({ type: "review", id }) }, "Review") : null;
    // The agent's own text for the card (escaped, whole), not the raw input drawn as it is.
    const shown = permissionDetail(request.toolCall);
    const detail = shown === null ? null : shown.kind === "command" ? h("pre", { className: "command" }, shown.text) : h("div", { className: "path" }, shown.text);
    const card = h(
      "div",
      { className: "permission", "data-permission-id": id },
      h("div", { className: "question" }, request.toolCall.title ?? "The agent asks for permission"),
      detail,
      h("div", { className: "options" }, review, ...buttons),
    );
    this.permissionCards.set(id, card);
    this.append(card);
  }

  permissionSettled(id: string, optionId: string | null): void {
    const card = this.permissionCards.get(id);
    if (!card) return;
    card.classList.add("settled");
    const chosen = Array.from(card.querySelectorAll<HTMLButtonElement>("button.option")).find((button) => button.dataset.optionId === optionId);
    const answer = chosen ? `✓ ${chosen.textContent ?? ""}` : "Cancelled";
    card.querySelector(".options")?.replaceChildren(h("span", { className: `answer ${optionId ?? "cancelled"}` }, answer));
    this.follow();
  }

  private showPlan(entries: PlanEntry[]): void {
    this.plan.hidden = entries.length === 0;
    this.plan.replaceChildren(
      h("div", { className: "plan-title" }, "Plan"),
      h(
        "ul",
        {},
        ...entries.map((entry) =>
          h("li", { className: entry.status }, h("input", { type: "checkbox", disabled: true, checked: entry.status === "completed" }), " ", entry.content),
        ),
      ),
    );
  }

  private showUsage(used: number, size: number, amount?: number, currency?: string): void {
    this.usage.hidden = false;
    const share = size > 0 ? Math.min(1, used / size) : 0;
    const cost = amount !== undefined ? ` · ${amount.toFixed(4)} ${currency ?? ""}` : "";
    const fill = h("div", { className: "fill" });
    fill.style.width = `${(share * 100).toFixed(1)}%`; // CSSOM, not a style attribute: the CSP allows it
    this.usage.replaceChildren(
      h("div", { className: "meter" }, fill),
      h("span", {}, `${used.toLocaleString()} / ${size.toLocaleString()} tokens${cost}`),
    );
  }
}

/** A file a replayed prompt carried, in the form `userText` draws as a chip. */
function attachedFile(uri: string): string {
  return `\n<file uri="${uri.replace(/&/g, "&amp;").replace(/"/g, "&quot;")}">\n</file>\n`;
}
