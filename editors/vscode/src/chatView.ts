import { randomBytes } from "node:crypto";
import * as vscode from "vscode";
import type { FromView, ToView } from "./protocol";
import { mergeChunks, ViewHistory } from "./viewHistory";

/** The chat webview in the activity bar. Messages posted before it is ready wait in order. */
export class ChatView implements vscode.WebviewViewProvider {
  static readonly id = "hermes.chat";
  private view: vscode.WebviewView | undefined;
  private ready = false;
  private backlog: ToView[] = [];
  private readonly history = new ViewHistory();

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly onMessage: (message: FromView) => void,
    private readonly onResolved: () => void,
  ) {}

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    this.ready = false;
    // A re-created view starts empty: it gets the thread so far again.
    this.backlog = this.history.replay();
    view.webview.options = { enableScripts: true, localResourceRoots: [vscode.Uri.joinPath(this.extensionUri, "dist"), vscode.Uri.joinPath(this.extensionUri, "media")] };
    view.webview.html = this.html(view.webview);
    view.webview.onDidReceiveMessage((message: FromView) => {
      if (message.type === "ready") {
        this.ready = true;
        for (const queued of this.backlog.splice(0)) {
          void view.webview.postMessage(queued);
        }
      }
      this.onMessage(message);
    });
    this.setBadge(this.badgeCount);
    view.onDidChangeVisibility(() => this.visibilityChanged?.());
    view.onDidDispose(() => {
      this.view = undefined;
      this.ready = false;
    });
    this.onResolved();
  }

  get visible(): boolean {
    return this.view !== undefined;
  }

  /** On screen now (resolved and not collapsed or behind another view). */
  get shown(): boolean {
    return this.view?.visible === true;
  }

  private badgeCount = 0;
  /** Called when the view is shown or hidden. */
  visibilityChanged: (() => void) | undefined;

  /** The count on the view's icon (pending approvals); 0 clears it. */
  setBadge(count: number): void {
    this.badgeCount = count;
    if (this.view) {
      // A badge of 0 is not shown; `undefined` does not clear one in VS Code 1.100.
      this.view.badge = { value: count, tooltip: count > 0 ? `${count} approval${count === 1 ? "" : "s"} waiting for you` : "" };
    }
  }

  /** Messages of this tick, sent together at its end (adjacent text chunks merged). */
  private outgoing: ToView[] = [];

  post(message: ToView): void {
    const last = this.outgoing.at(-1);
    if (last && mergeChunks(last, message)) {
      return;
    }
    this.outgoing.push(message);
    if (this.outgoing.length === 1) {
      // A model streams thousands of small deltas; one webview message per delta makes the
      // relay (extension host -> workbench -> webview) the bottleneck, so a tick's worth go
      // out as one.
      setImmediate(() => this.flush());
    }
  }

  private flush(): void {
    for (const message of this.outgoing.splice(0)) {
      this.history.add(message);
      if (this.view && this.ready) {
        void this.view.webview.postMessage(message);
      } else {
        this.backlog.push(message);
      }
    }
  }

  private html(webview: vscode.Webview): string {
    const nonce = randomBytes(16).toString("base64");
    const script = webview.asWebviewUri(vscode.Uri.joinPath(this.extensionUri, "dist", "webview.js"));
    const style = webview.asWebviewUri(vscode.Uri.joinPath(this.extensionUri, "media", "chat.css"));
    const csp = [
      "default-src 'none'",
      `style-src ${webview.cspSource}`,
      `img-src ${webview.cspSource} data:`,
      `font-src ${webview.cspSource}`,
      `script-src 'nonce-${nonce}'`,
    ].join("; ");
    return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${style}">
<title>Hermes</title>
</head>
<body>
<h1 class="visually-hidden">Hermes chat</h1>
<header id="toolbar">
  <span id="status" role="status" aria-label="Agent status" data-state="stopped">stopped</span>
  <span id="pickers"></span>
  <span class="spacer"></span>
  <button id="history" title="Past sessions">History</button>
  <button id="new" title="New session">New</button>
</header>
<div id="sessions" hidden></div>
<main id="thread" aria-label="Conversation"></main>
<button id="jump" hidden aria-label="Jump to the latest message">Jump to latest ↓</button>
<div id="announce" class="visually-hidden" aria-live="polite"></div>
<div id="plan" hidden></div>
<footer id="composer">
  <div id="usage" hidden></div>
  <div id="attachments"></div>
  <ul id="completions" hidden></ul>
  <textarea id="input" rows="3" aria-label="Message to Hermes" placeholder="Ask Hermes… (/ for commands, @ for files, Enter to send)"></textarea>
  <div class="actions"><button id="send">Send</button><button id="stop" disabled>Stop</button></div>
</footer>
<script nonce="${nonce}" src="${script}"></script>
</body>
</html>`;
  }
}
