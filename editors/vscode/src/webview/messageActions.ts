/**
 * Edit and Retry on the user's messages. Retry sends the message again; Edit opens it in place
 * and sends the new text. With the agent's rewind the conversation first goes back to just
 * before that message (the view then drops the turns after it); without, it is a new prompt.
 */
import type { FromView } from "../protocol";
import { promptPreview } from "../textEdits";
import { h } from "./dom";

type Post = (message: FromView) => void;

export class MessageActions {
  private busy = false;

  constructor(
    private readonly thread: HTMLElement,
    private readonly post: Post,
  ) {
    // Messages arrive live and in replays, through the thread's own code: decorate them as
    // they are added.
    new MutationObserver((records) => {
      for (const record of records) {
        for (const node of Array.from(record.addedNodes)) {
          if (node instanceof HTMLElement && node.matches(".message.user")) this.decorate(node);
        }
      }
    }).observe(thread, { childList: true });
  }

  /** While a turn runs the agent cannot rewind: the buttons wait. */
  setBusy(busy: boolean): void {
    this.busy = busy;
    for (const button of Array.from(this.thread.querySelectorAll<HTMLButtonElement>(".message-actions button"))) button.disabled = busy;
  }

  /** The agent cut the conversation before the `ordinal`-th user message: drop it and what follows. */
  rewound(ordinal: number): void {
    const message = this.userMessages()[ordinal];
    if (!message) return;
    while (message.nextSibling) message.nextSibling.remove();
    message.remove();
  }

  private userMessages(): HTMLElement[] {
    return Array.from(this.thread.querySelectorAll<HTMLElement>(":scope > .message.user"));
  }

  private decorate(message: HTMLElement): void {
    if (typedText(message).startsWith("/")) return; // a command, not a prompt the agent can go back to
    const label = (verb: string): string => `${verb} this message`;
    const retry = h("button", { className: "retry-message", title: "Send this message again", "aria-label": label("Retry"), onclick: () => this.resend(message, typedText(message), true) }, "Retry");
    const edit = h("button", { className: "edit-message", title: "Edit and send again", "aria-label": label("Edit"), onclick: () => this.edit(message) }, "Edit");
    retry.disabled = edit.disabled = this.busy;
    message.append(h("div", { className: "message-actions" }, edit, retry));
  }

  private edit(message: HTMLElement): void {
    if (message.querySelector(".edit-form")) return;
    const original = typedText(message);
    const box = h("textarea", { className: "edit-input", rows: "3", "aria-label": "Edited message" });
    box.value = original;
    const restore = h("input", { type: "checkbox", className: "restore-files", checked: true });
    const form = h(
      "div",
      { className: "edit-form" },
      box,
      h("label", { className: "restore" }, restore, " Also undo the file changes made since this message"),
      h(
        "div",
        { className: "edit-buttons" },
        h("button", { className: "cancel-edit", onclick: () => close() }, "Cancel"),
        h("button", { className: "send-edit", onclick: () => send() }, "Send"),
      ),
    );
    const close = (): void => {
      form.remove();
      message.classList.remove("editing");
    };
    const send = (): void => {
      const text = box.value.trim();
      if (!text) return;
      close();
      this.resend(message, text, restore.checked, original);
    };
    box.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        send();
      } else if (event.key === "Escape") {
        event.stopPropagation();
        close();
      }
    });
    message.classList.add("editing");
    message.append(form);
    box.focus();
  }

  private resend(message: HTMLElement, text: string, restoreFiles: boolean, original = text): void {
    const messages = this.userMessages();
    const ordinal = messages.indexOf(message);
    if (ordinal < 0 || this.busy) return;
    const preview = promptPreview(original);
    const later = messages.slice(ordinal + 1).filter((other) => promptPreview(typedText(other)) === preview).length;
    this.post({ type: "resend", ordinal, original, later, text, restoreFiles });
  }
}

/** What the user typed in that message: without the chips of files it carried, or the
 * "Attached: …" line a live message shows for them. */
function typedText(message: HTMLElement): string {
  const body = message.querySelector(".body");
  if (!body) return "";
  const parts = Array.from(body.childNodes)
    .filter((node) => !(node instanceof HTMLElement && node.classList.contains("chip")))
    .map((node) => node.textContent ?? "");
  return parts.join("").replace(/\n\nAttached: [^\n]*$/, "").trim();
}
