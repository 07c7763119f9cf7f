import * as vscode from "vscode";
import type { AgentState } from "./protocol";

const ICONS: Record<AgentState, string> = {
  stopped: "$(circle-outline)",
  starting: "$(loading~spin)",
  ready: "$(hubot)",
  busy: "$(sync~spin)",
  error: "$(error)",
};

/** The status bar item: the agent's state and the session's mode; a click opens the chat. */
export class StatusItem implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, 100);

  constructor() {
    this.item.command = "hermes.open";
    this.show("stopped", undefined);
    this.item.show();
  }

  show(state: AgentState, mode: string | undefined): void {
    this.item.text = `${ICONS[state]} Hermes${mode ? ` · ${mode}` : ""}`;
    this.item.tooltip = `Hermes: ${state}${mode ? `, mode ${mode}` : ""}`;
  }

  dispose(): void {
    this.item.dispose();
  }
}
