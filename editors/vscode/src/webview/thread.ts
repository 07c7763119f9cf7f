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
import { addCopyButtons, renderMarkdown } from "./markdown";

type Post = (message: FromView) => void;

interface StreamedBlock {
  kind: "agent" | "thought" | "user";
  element: HTMLElement;
  body: HTMLElement;
  text: string;
  pending: boolean;
}

/** Renders the thread: messages, thoughts, tool-call cards, permission cards, terminals. */
export class Thread {
  private current: StreamedBlock | undefined;
  private readonly toolCards = new Map<string, HTMLElement>();
  private readonly terminalText = new Map<string, string>();
  private readonly permissionCards = new Map<string, HTMLElement>();
  /** The session's folder: paths under it are shown relative. */
  cwd = "";

  constructor(
    private readonly root: HTMLElement,
    private readonly plan: HTMLElement,
    private readonly usage: HTMLElement,
    private readonly post: Post,
  ) {}

  clear(): void {
    this.root.replaceChildren();
    this.current = undefined;
    this.toolCards.clear();
    this.permissionCards.clear();
    this.plan.hidden = true;
    this.usage.hidden = true;
  }

  private append(node: HTMLElement): void {
    this.root.append(node);
    this.follow();
  }

  userMessage(text: string): void {
    this.current = undefined;
    this.append(h("div", { className: "message user" }, h("div", { className: "body" }, text)));
  }

  notice(text: string, className = "notice"): HTMLElement {
    this.current = undefined;
    const element = h("div", { className }, text);
    this.append(element);
    return element;
  }

  update(update: SessionUpdate): void {
    switch (update.sessionUpdate) {
      case "agent_message_chunk":
        return this.stream("agent", update.content);
      case "agent_thought_chunk":
        return this.stream("thought", update.content);
      case "user_message_chunk":
        return this.stream("user", update.content);
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

  private stream(kind: StreamedBlock["kind"], content: ContentBlock): void {
    const text = content.type === "text" ? content.text : content.type === "resource_link" ? `[${content.name}](${content.uri})` : "";
    if (!this.current || this.current.kind !== kind) {
      const body = h("div", { className: "body" });
      const element =
        kind === "thought"
          ? h("details", { className: "thought" }, h("summary", {}, "Thinking"), body)
          : h("div", { className: `message ${kind}` }, body);
      this.current = { kind, element, body, text: "", pending: false };
      this.append(element);
    }
    const block = this.current;
    block.text += text;
    if (!block.pending) {
      // One render per frame, however many chunks arrive in it.
      block.pending = true;
      requestAnimationFrame(() => {
        block.pending = false;
        block.body.innerHTML = kind === "user" ? "" : renderMarkdown(block.text);
        if (kind === "user") {
          block.body.textContent = block.text;
        }
        addCopyButtons(block.body, (copied) => this.post({ type: "copy", text: copied }));
        this.root.scrollTop = this.root.scrollHeight;
      });
    }
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

  /** Keeps the newest content in sight as cards grow. */
  private follow(): void {
    this.root.scrollTop = this.root.scrollHeight;
  }

  private toolContent(item: ToolCallContent): HTMLElement {
    if (item.type === "terminal") {
      const pre = h("pre", { className: "terminal", "data-terminal-id": item.terminalId }, this.terminalText.get(item.terminalId) ?? "");
      return pre;
    }
    if (item.type === "diff") {
      const before = (item.oldText ?? "").split("\n").length;
      const after = item.newText.split("\n").length;
      return h("div", { className: "diff" }, `${this.shortPath(item.path)}: ${item.oldText == null ? "new file" : `${before} → ${after} lines`}`);
    }
    const block = item.content;
    const div = h("div", { className: "markdown" });
    div.innerHTML = renderMarkdown(block.type === "text" ? block.text : "");
    return div;
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
    const input = request.toolCall.rawInput as Record<string, unknown> | undefined;
    const detail = typeof input?.command === "string" ? h("pre", { className: "command" }, input.command) : typeof input?.path === "string" ? h("div", { className: "path" }, input.path) : null;
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
