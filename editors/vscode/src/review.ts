import * as path from "node:path";
import * as vscode from "vscode";
import type { RequestPermissionRequest } from "@agentclientprotocol/sdk";
import { currentText } from "./editorFiles";
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

/** Opens VS Code's diff editor on what the edit in `request` would do. */
export async function reviewEdit(request: RequestPermissionRequest, cwd: string, documents: ReviewDocuments): Promise<string | undefined> {
  const call = request.toolCall;
  for (const item of call.content ?? []) {
    if (item.type === "diff") {
      const name = path.basename(item.path);
      await open(documents.add(name, item.oldText ?? ""), documents.add(name, item.newText), name);
      return undefined;
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
  await open(documents.add(name, before), documents.add(name, after), name);
  return undefined;
}

async function open(left: vscode.Uri, right: vscode.Uri, name: string): Promise<void> {
  await vscode.commands.executeCommand("vscode.diff", left, right, `${name}: current ↔ proposed by Hermes`, { preview: true });
}
