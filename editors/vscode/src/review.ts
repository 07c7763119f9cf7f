import * as path from "node:path";
import * as vscode from "vscode";
import type { RequestPermissionRequest } from "@agentclientprotocol/sdk";
import { currentText } from "./editorFiles";
import type { PermissionBroker } from "./permissions";
import { proposedText } from "./textEdits";

export const REVIEW_SCHEME = "hermes-review";

/** Serves the before/after texts of reviews as read-only virtual documents. */
export class ReviewDocuments implements vscode.TextDocumentContentProvider {
  private readonly texts = new Map<string, string>();
  private next = 1;

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.path) ?? "";
  }

  add(name: string, text: string): vscode.Uri {
    const key = `/${this.next++}/${name}`;
    this.texts.set(key, text);
    return vscode.Uri.from({ scheme: REVIEW_SCHEME, path: key });
  }
}

/**
 * The diff editors opened to review a permission request. Each closes once the request is
 * decided (in the view, in a notification, or with the diff's own Allow / Deny title buttons),
 * so a stale proposal never stays on screen looking undecided.
 */
export class Reviews {
  /** The proposed side's URI (the diff editor's resource) -> the request it shows. */
  private readonly open = new Map<string, string>();

  constructor(readonly documents: ReviewDocuments) {}

  async show(id: string, request: RequestPermissionRequest, cwd: string): Promise<string | undefined> {
    const result = await reviewEdit(request, cwd, this.documents);
    if (typeof result !== "string") {
      this.open.set(result.toString(), id);
      return undefined;
    }
    return result;
  }

  /** The request the diff showing `uri` reviews, while it waits. */
  requestOf(uri: vscode.Uri | undefined): string | undefined {
    return uri ? this.open.get(uri.toString()) : undefined;
  }

  /** Closes the diffs of requests no longer waiting (answered or cancelled). */
  async closeSettled(waiting: readonly string[]): Promise<void> {
    const settled = [...this.open].filter(([, id]) => !waiting.includes(id)).map(([uri]) => uri);
    if (settled.length === 0) return;
    for (const uri of settled) this.open.delete(uri);
    const tabs = vscode.window.tabGroups.all
      .flatMap((group) => group.tabs)
      .filter((tab) => tab.input instanceof vscode.TabInputTextDiff && settled.includes(tab.input.modified.toString()));
    if (tabs.length) await vscode.window.tabGroups.close(tabs, true);
  }
}

/** The review's own answers: the title-bar buttons of its diff editor. */
export function registerReviewCommands(reviews: Reviews, broker: PermissionBroker): vscode.Disposable[] {
  const answer = (kinds: string[]) => (uri?: vscode.Uri) => {
    const id = reviews.requestOf(uri ?? activeDiff());
    const pending = id ? broker.get(id) : undefined;
    const option = pending && kinds.map((kind) => pending.request.options.find((o) => o.kind === kind)).find(Boolean);
    if (id && option) broker.answer(id, option.optionId);
  };
  return [
    vscode.commands.registerCommand("hermes.review.allow", answer(["allow_once", "allow_always"])),
    vscode.commands.registerCommand("hermes.review.deny", answer(["reject_once", "reject_always"])),
  ];
}

function activeDiff(): vscode.Uri | undefined {
  const input = vscode.window.tabGroups.activeTabGroup.activeTab?.input;
  return input instanceof vscode.TabInputTextDiff ? input.modified : undefined;
}

/** Opens VS Code's diff editor on what the edit in `request` would do: the proposed side's URI,
 * or why it cannot. */
export async function reviewEdit(request: RequestPermissionRequest, cwd: string, documents: ReviewDocuments): Promise<vscode.Uri | string> {
  const call = request.toolCall;
  for (const item of call.content ?? []) {
    if (item.type === "diff") {
      const name = path.basename(item.path);
      const proposed = documents.add(name, item.newText);
      await open(documents.add(name, item.oldText ?? ""), proposed, name);
      return proposed;
    }
  }
  const input = (call.rawInput ?? {}) as Record<string, unknown>;
  if (typeof input.path !== "string") {
    return "This request names no file to review.";
  }
  const file = path.resolve(cwd, input.path);
  let before = "";
  try {
    before = await currentText(file);
  } catch {
    before = ""; // a new file
  }
  const after = proposedText(before, input);
  if (after === undefined) {
    return `The edit does not apply to the current text of ${input.path}.`;
  }
  const name = path.basename(file);
  const proposed = documents.add(name, after);
  await open(documents.add(name, before), proposed, name);
  return proposed;
}

async function open(left: vscode.Uri, right: vscode.Uri, name: string): Promise<void> {
  await vscode.commands.executeCommand("vscode.diff", left, right, `${name}: current ↔ proposed by Hermes`, { preview: true });
}
