import * as vscode from "vscode";
import type { ChatView } from "./chatView";
import type { PermissionBroker } from "./permissions";

/**
 * A turn waiting for the user must not wait unseen: the view's badge counts the open
 * requests, and when the view is hidden each new one also raises a notification with its
 * Allow / Deny answers and "Show".
 */
export class PendingApprovals implements vscode.Disposable {
  private readonly notified = new Set<string>();

  constructor(
    private readonly broker: PermissionBroker,
    private readonly view: ChatView,
    private readonly reveal: () => Thenable<unknown>,
  ) {}

  update(): void {
    const ids = this.broker.pendingIds;
    this.view.setBadge(ids.length);
    for (const id of [...this.notified]) {
      if (!ids.includes(id)) this.notified.delete(id);
    }
    if (this.view.shown) return;
    for (const id of ids) {
      if (!this.notified.has(id)) {
        this.notified.add(id);
        void this.notify(id);
      }
    }
  }

  private async notify(id: string): Promise<void> {
    const pending = this.broker.get(id);
    if (!pending) return;
    const { options, toolCall } = pending.request;
    const allow = options.find((option) => option.kind === "allow_once");
    const deny = options.find((option) => option.kind === "reject_once");
    const buttons = [allow?.name, deny?.name, "Show"].filter((name): name is string => Boolean(name));
    const picked = await vscode.window.showWarningMessage(`Hermes asks: ${toolCall.title ?? "permission to go on"}`, ...buttons);
    if (picked === "Show" || picked === undefined) {
      if (picked === "Show") await this.reveal();
      return;
    }
    const option = picked === allow?.name ? allow : deny;
    if (option) this.broker.answer(id, option.optionId);
  }

  dispose(): void {
    this.view.setBadge(0);
  }
}
