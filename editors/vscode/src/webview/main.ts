import type { SessionConfigOption } from "@agentclientprotocol/sdk";
import type { ErrorAction, FromView, ToView } from "../protocol";
import { acceptAttachments, showAttachments } from "./attachments";
import { ChangesPanel } from "./changes";
import { History } from "./history";
import { Composer } from "./composer";
import { byId, h } from "./dom";
import { MessageActions } from "./messageActions";
import { Thread } from "./thread";

declare function acquireVsCodeApi(): { postMessage(message: FromView): void };

const vscode = acquireVsCodeApi();
const post = (message: FromView): void => vscode.postMessage(message);

const status = byId<HTMLElement>("status");
const pickers = byId<HTMLElement>("pickers");
const sessions = byId<HTMLElement>("sessions");
const history = new History(sessions, post);
const sendButton = byId<HTMLButtonElement>("send");
const stopButton = byId<HTMLButtonElement>("stop");
const attachmentsBox = byId<HTMLElement>("attachments");
const announce = byId<HTMLElement>("announce");
const thread = new Thread(byId("thread"), byId("plan"), byId("usage"), post, byId<HTMLButtonElement>("jump"));
const input = byId<HTMLTextAreaElement>("input");
thread.examples = (text) => {
  input.value = text;
  input.focus();
};
thread.clear(); // the empty state until a session's thread arrives
const composer = new Composer(byId("input"), byId("completions"), post, send);
acceptAttachments(input, post);

// The review flow: the files changed (pinned above the composer), Edit and Retry on messages.
const changes = new ChangesPanel(post);
byId("composer").before(changes.element);
const messageActions = new MessageActions(byId("thread"), post);

/** Sending during a turn is allowed: the agent queues the prompt (or `/steer`s the turn). */
function send(): void {
  const { text, mentions } = composer.take();
  if (text) post({ type: "prompt", text, mentions });
}

composer.onEscape = () => {
  if (status.dataset.state === "busy") post({ type: "cancel" });
};
sendButton.addEventListener("click", send);
stopButton.addEventListener("click", () => post({ type: "cancel" }));
byId("new").addEventListener("click", () => post({ type: "newSession" }));
byId("history").addEventListener("click", () => {
  if (sessions.hidden) {
    history.requested = true;
    post({ type: "listSessions" });
  }
  else sessions.hidden = true;
});

function showPickers(options: SessionConfigOption[]): void {
  pickers.replaceChildren(
    ...options
      .filter((option) => option.type === "select")
      .map((option) => {
        const select = h("select", { "data-config-id": option.id, title: option.description ?? option.name, "aria-label": option.name });
        const flat = option.options.flatMap((entry) => ("options" in entry ? entry.options : [entry]));
        for (const choice of flat) {
          const element = h("option", { value: choice.value, title: choice.description ?? "" }, choice.name);
          element.selected = choice.value === option.currentValue;
          select.append(element);
        }
        select.addEventListener("change", () => post({ type: "setConfig", configId: option.id, value: select.value }));
        return h("label", { className: "picker" }, select);
      }),
  );
}

const ACTION_LABELS: Record<ErrorAction, string> = {
  setup: "Set up API key",
  install: "Set hermes.command",
  trust: "Manage workspace trust",
  log: "Show log",
  restart: "Restart agent",
  retry: "Retry",
};

/** An error, once: the same text twice in a row is one box. */
function showError(message: string, action?: ErrorAction): void {
  if (thread.lastError === message) return;
  const box = thread.error(message);
  if (action) {
    box.append(" ", h("button", { className: `action ${action}`, "data-action": action, onclick: () => post({ type: "action", action }) }, ACTION_LABELS[action]));
  }
  announce.textContent = message;
}

window.addEventListener("message", (event: MessageEvent<ToView>) => {
  const message = event.data;
  switch (message.type) {
    case "state":
      status.dataset.state = message.state;
      status.textContent = message.detail ? `${message.state}: ${message.detail}` : message.state;
      stopButton.disabled = message.state !== "busy";
      messageActions.setBusy(message.state === "busy");
      return;
    case "session":
      showPickers(message.configOptions);
      document.body.dataset.sessionId = message.sessionId;
      thread.cwd = message.cwd;
      changes.cwd = message.cwd;
      return;
    case "clear":
      thread.cwd = message.cwd; // a replay comes before its session's `session` message
      return thread.clear();
    case "update":
      return thread.update(message.update);
    case "userMessage":
      return thread.userMessage(message.text);
    case "turnEnded":
      if (message.stopReason !== "end_turn") thread.notice(message.stopReason === "cancelled" ? "Stopped." : `Turn ended: ${message.stopReason}`);
      announce.textContent = message.stopReason === "end_turn" ? "Hermes answered." : `Turn ended: ${message.stopReason}`;
      return;
    case "permission":
      return thread.permission(message.id, message.request, message.reviewable);
    case "permissionSettled":
      return thread.permissionSettled(message.id, message.optionId);
    case "terminalOutput":
      return thread.terminalOutput(message.terminalId, message.text);
    case "terminalExit":
      return thread.terminalExit(message.terminalId, message.exitCode, message.signal);
    case "commands":
      return composer.setCommands(message.commands);
    case "sessions":
      return history.show(message.sessions);
    case "files":
      return composer.files(message.query, message.files);
    case "attachments":
      return showAttachments(attachmentsBox, message.attachments, post);
    case "error":
      return showError(message.message, message.action);
    case "notice":
      thread.notice(message.message, "notice visible");
      announce.textContent = message.message;
      return;
    case "changes":
      return changes.show(message.files);
    case "rewound":
      return messageActions.rewound(message.ordinal);
    case "promptRejected":
      if (!input.value.trim()) input.value = message.text;
      return;
  }
});

post({ type: "ready" });
