import type { AvailableCommand } from "@agentclientprotocol/sdk";
import type { FromView } from "../protocol";
import { h } from "./dom";

type Post = (message: FromView) => void;

interface Completion {
  label: string;
  detail: string;
  insert: string;
  /** A command that runs as it is (no argument, or an optional one): typed in full, Enter sends it. */
  runsAsIs?: boolean;
}

/** The prompt box: Enter sends, `/` completes the agent's commands, `@` completes files. */
export class Composer {
  private commands: AvailableCommand[] = [];
  private items: Completion[] = [];
  private selected = 0;
  private fileQuery: string | undefined;
  /** Prompts sent in this view, oldest first, for Up / Down. */
  private readonly sent: string[] = [];
  private recalled: number | undefined;
  /** Esc with nothing to close stops the turn. */
  onEscape: (() => void) | undefined;

  constructor(
    private readonly input: HTMLTextAreaElement,
    private readonly list: HTMLUListElement,
    private readonly post: Post,
    private readonly send: () => void,
  ) {
    input.addEventListener("keydown", (event) => this.keydown(event));
    input.addEventListener("input", () => this.refresh());
  }

  setCommands(commands: AvailableCommand[]): void {
    this.commands = commands;
  }

  files(query: string, files: string[]): void {
    if (query !== this.fileQuery) return;
    this.show(files.map((file) => ({ label: `@${file}`, detail: "", insert: `@${file} ` })));
  }

  /** The text and the files it mentions (`@path`). */
  take(): { text: string; mentions: string[] } {
    const text = this.input.value.trim();
    this.input.value = "";
    this.hide();
    if (text && this.sent.at(-1) !== text) this.sent.push(text);
    this.recalled = undefined;
    const mentions = [...text.matchAll(/(?:^|\s)@([^\s@]+)/g)].map((match) => match[1]!);
    return { text, mentions };
  }

  private wordBeforeCursor(): { word: string; start: number } {
    const upto = this.input.value.slice(0, this.input.selectionStart);
    const match = /(^|\s)(\S*)$/.exec(upto);
    const word = match?.[2] ?? "";
    return { word, start: upto.length - word.length };
  }

  private refresh(): void {
    const { word, start } = this.wordBeforeCursor();
    if (word.startsWith("/") && start === 0) {
      const typed = word.slice(1);
      this.fileQuery = undefined;
      this.show(
        this.commands
          .filter((command) => command.name.startsWith(typed))
          .map((command) => ({ label: `/${command.name}`, detail: command.description, insert: `/${command.name} `, runsAsIs: runsAsIs(command) })),
      );
    } else if (word.startsWith("@") && word.length > 1) {
      this.fileQuery = word.slice(1);
      this.post({ type: "findFiles", query: this.fileQuery });
    } else {
      this.fileQuery = undefined;
      this.hide();
    }
  }

  private show(items: Completion[]): void {
    this.items = items;
    this.selected = 0;
    this.list.hidden = items.length === 0;
    this.render();
  }

  private render(): void {
    this.list.replaceChildren(
      ...this.items.map((item, index) =>
        h(
          "li",
          { className: index === this.selected ? "selected" : "", onmousedown: (event: Event) => (event.preventDefault(), this.pick(index)) },
          h("span", { className: "label" }, item.label),
          h("span", { className: "detail" }, item.detail),
        ),
      ),
    );
  }

  private hide(): void {
    this.items = [];
    this.list.hidden = true;
  }

  private pick(index: number): void {
    const item = this.items[index];
    if (!item) return;
    const { start } = this.wordBeforeCursor();
    const value = this.input.value;
    const end = this.input.selectionStart;
    this.input.value = value.slice(0, start) + item.insert + value.slice(end);
    const cursor = start + item.insert.length;
    this.input.setSelectionRange(cursor, cursor);
    this.hide();
    this.input.focus();
  }

  private keydown(event: KeyboardEvent): void {
    if (!this.list.hidden && this.items.length > 0) {
      if (event.key === "ArrowDown" || event.key === "ArrowUp") {
        event.preventDefault();
        this.selected = (this.selected + (event.key === "ArrowDown" ? 1 : -1) + this.items.length) % this.items.length;
        this.render();
        return;
      }
      const item = this.items[this.selected];
      if (event.key === "Enter" && !event.shiftKey && item?.runsAsIs && this.input.value.trim() === item.label) {
        event.preventDefault();
        this.hide();
        this.send();
        return;
      }
      if (event.key === "Tab" || (event.key === "Enter" && !event.shiftKey)) {
        event.preventDefault();
        this.pick(this.selected);
        return;
      }
      if (event.key === "Escape") {
        this.hide();
        return;
      }
    }
    if (event.key === "Escape") {
      this.onEscape?.();
      return;
    }
    // Up on the first line recalls the previous prompt; Down goes forward again.
    const onFirstLine = !this.input.value.slice(0, this.input.selectionStart).includes("\n");
    const onLastLine = !this.input.value.slice(this.input.selectionEnd).includes("\n");
    if (event.key === "ArrowUp" && onFirstLine && this.sent.length > 0 && (this.input.value === "" || this.recalled !== undefined)) {
      event.preventDefault();
      this.recalled = Math.max(0, (this.recalled ?? this.sent.length) - 1);
      this.input.value = this.sent[this.recalled]!;
      return;
    }
    if (event.key === "ArrowDown" && onLastLine && this.recalled !== undefined) {
      event.preventDefault();
      this.recalled += 1;
      this.input.value = this.sent[this.recalled] ?? "";
      if (this.recalled >= this.sent.length) this.recalled = undefined;
      return;
    }
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      this.send();
    }
  }
}

/** A command with no argument, or only an optional one (its hint in brackets). */
function runsAsIs(command: AvailableCommand): boolean {
  const input = command.input as { hint?: string } | null | undefined;
  return !input || (typeof input.hint === "string" && input.hint.trim().startsWith("["));
}
