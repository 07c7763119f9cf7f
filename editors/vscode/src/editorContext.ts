import * as vscode from "vscode";
import { IMAGE_TYPES, MAX_IMAGE_BYTES, type Chip, type CurrentEditor } from "./contextChips";

/**
 * The active text editor's file (or its selection) as a chip: only a file of the workspace's
 * folders, never one outside them (the user's settings.json, a file under ~) that is
 * merely open.
 */
export function currentEditorChip(editor: vscode.TextEditor | undefined): CurrentEditor | undefined {
  if (!editor || editor.document.uri.scheme !== "file" || !vscode.workspace.getWorkspaceFolder(editor.document.uri)) return undefined;
  const uri = editor.document.uri.toString();
  const name = vscode.workspace.asRelativePath(editor.document.uri, false);
  const selection = editor.selection;
  if (selection.isEmpty) return { kind: "file", label: name, uri };
  // A selection ending at the start of a line does not take that line.
  const endLine = selection.end.character === 0 && selection.end.line > selection.start.line ? selection.end.line : selection.end.line + 1;
  const startLine = selection.start.line + 1;
  return {
    kind: "selection",
    label: `${name}:${startLine}-${endLine}`,
    uri,
    text: editor.document.getText(selection),
    startLine,
    endLine,
  };
}

/**
 * Files dropped on the view, as chips. Only `file:` URIs of files inside the workspace's
 * folders are taken: a drag from another app can carry any URI.
 */
export async function droppedChips(uris: string[]): Promise<{ chips: Chip[]; refused: string[] }> {
  const chips: Chip[] = [];
  const refused: string[] = [];
  for (const text of uris.slice(0, 20)) {
    let uri: vscode.Uri;
    try {
      uri = vscode.Uri.parse(text, true);
    } catch {
      refused.push(text);
      continue;
    }
    if (uri.scheme !== "file" || !vscode.workspace.getWorkspaceFolder(uri)) {
      refused.push(text);
      continue;
    }
    try {
      await vscode.workspace.fs.stat(uri);
    } catch {
      refused.push(text);
      continue;
    }
    chips.push({ kind: "file", label: vscode.workspace.asRelativePath(uri, false), uri: uri.toString() });
  }
  return { chips, refused };
}

/** A pasted image as a chip, or why it is refused. */
export function pastedImageChip(mimeType: string, data: string, name: string): Chip | string {
  if (!IMAGE_TYPES.has(mimeType)) return `Hermes takes PNG, JPEG, GIF and WebP images, not ${mimeType || "this kind of file"}.`;
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(data)) return "The pasted image could not be read.";
  const bytes = Math.floor((data.length * 3) / 4);
  if (bytes > MAX_IMAGE_BYTES) return `The pasted image is ${(bytes / 1048576).toFixed(1)} MB; Hermes sends images up to ${MAX_IMAGE_BYTES / 1048576} MB.`;
  const label = name.replace(/[^\w.\- ]/g, "").slice(0, 60) || "image";
  return { kind: "image", label, mimeType, data };
}
