import { randomBytes } from "node:crypto";
import * as vscode from "vscode";
import type { FromView, ToView } from "./protocol";

/** The chat webview in the activity bar. Messages posted before it is ready wait in order. */
export class ChatView implements vscode.WebviewViewProvider {
  static readonly id = "hermes.chat";
  private view: vscode.WebviewView | undefined;
  private ready = false;
  private backlog: ToView[] = [];
  private readonly history: ToView[] = [];

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly onMessage: (message: FromView) => void,
    private readonly onResolved: () => void,
  ) {}

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    this.ready = false;
    // A re-created view starts empty: it gets the thread so far again.
    this.backlog = [...this.history];
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
    view.onDidDispose(() => {
      this.view = undefined;
      this.ready = false;
    });
    this.onResolved();
  }

  get visible(): boolean {
    return this.view !== undefined;
  }

  post(message: ToView): void {
    if (message.type === "clear") {
      this.history.length = 0;
    }
    this.history.push(message);
    if (this.view && this.ready) {
      void this.view.webview.postMessage(message);
    } else {
      this.backlog.push(message);
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
<header id="toolbar">
  <span id="status" data-state="stopped">stopped</span>
  <span id="pickers"></span>
  <span class="spacer"></span>
  <button id="history" title="Past sessions">History</button>
  <button id="new" title="New session">New</button>
</header>
<div id="sessions" hidden></div>
<main id="thread" aria-live="polite"></main>
<div id="plan" hidden></div>
<footer id="composer">
  <div id="usage" hidden></div>
  <div id="attachments"></div>
  <ul id="completions" hidden></ul>
  <textarea id="input" rows="3" placeholder="Ask Hermes… (/ for commands, @ for files, Enter to send)"></textarea>
  <div class="actions"><button id="send">Send</button><button id="stop" disabled>Stop</button></div>
</footer>
<script nonce="${nonce}" src="${script}"></script>
</body>
</html>`;
  }
}
