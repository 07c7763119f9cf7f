import * as vscode from "vscode";
import type { ReadTextFileRequest, ReadTextFileResponse, WriteTextFileRequest } from "@agentclientprotocol/sdk";
import { sliceLines } from "./textEdits";

function openDocument(path: string): vscode.TextDocument | undefined {
  return vscode.workspace.textDocuments.find((doc) => doc.uri.scheme === "file" && doc.uri.fsPath === path);
}

/** The text the user sees: the open buffer (unsaved changes included), else the file on disk. */
export async function currentText(path: string): Promise<string> {
  const open = openDocument(path);
  if (open) {
    return open.getText();
  }
  const bytes = await vscode.workspace.fs.readFile(vscode.Uri.file(path));
  return new TextDecoder("utf-8").decode(bytes);
}

export async function readTextFile(request: ReadTextFileRequest): Promise<ReadTextFileResponse> {
  return { content: sliceLines(await currentText(request.path), request.line, request.limit) };
}

/**
 * Writes through a WorkspaceEdit on the document, so Undo takes it back, then saves it: a
 * command the agent runs next (tests, a build) reads the file from disk and must see the
 * edit. A file that does not exist yet is created with its content.
 */
export async function writeTextFile(request: WriteTextFileRequest): Promise<void> {
  const uri = vscode.Uri.file(request.path);
  let exists = true;
  try {
    await vscode.workspace.fs.stat(uri);
  } catch {
    exists = false;
  }
  const edit = new vscode.WorkspaceEdit();
  if (!exists && !openDocument(request.path)) {
    edit.createFile(uri, { ignoreIfExists: true, contents: new TextEncoder().encode(request.content) });
    if (!(await vscode.workspace.applyEdit(edit))) {
      throw new Error(`could not create ${request.path}`);
    }
    return;
  }
  const document = await vscode.workspace.openTextDocument(uri);
  const whole = new vscode.Range(document.positionAt(0), document.positionAt(document.getText().length));
  edit.replace(uri, whole, request.content);
  if (!(await vscode.workspace.applyEdit(edit))) {
    throw new Error(`the editor refused the edit of ${request.path}`);
  }
  if (!(await document.save())) {
    throw new Error(`the edit of ${request.path} is in the editor but could not be saved`);
  }
}

/** The text the user sees, or undefined when there is no such file (for Undo's "before"). */
export async function textIfExists(path: string): Promise<string | undefined> {
  try {
    return await currentText(path);
  } catch (error) {
    if (error instanceof vscode.FileSystemError && error.code === "FileNotFound") return undefined;
    throw error; // unreadable is not absent: Undo must never delete a file that was there
  }
}

/**
 * Undo of the agent's change: the text goes back into the buffer and onto disk (so it stays
 * in the editor's own undo history), or a file the agent created is deleted and its tabs closed.
 */
export async function restoreFile(path: string, text: string | undefined): Promise<void> {
  const uri = vscode.Uri.file(path);
  if (text !== undefined) {
    await writeTextFile({ sessionId: "", path, content: text });
    return;
  }
  const edit = new vscode.WorkspaceEdit();
  edit.deleteFile(uri, { ignoreIfNotExists: true });
  if (!(await vscode.workspace.applyEdit(edit))) {
    throw new Error(`could not delete ${path}`);
  }
  const tabs = vscode.window.tabGroups.all
    .flatMap((group) => group.tabs)
    .filter((tab) => tab.input instanceof vscode.TabInputText && tab.input.uri.fsPath === path);
  if (tabs.length) await vscode.window.tabGroups.close(tabs, true);
}

/** The file's text on disk, or undefined when there is none. */
export async function diskTextIfExists(path: string): Promise<string | undefined> {
  try {
    return new TextDecoder("utf-8").decode(await vscode.workspace.fs.readFile(vscode.Uri.file(path)));
  } catch (error) {
    if (error instanceof vscode.FileSystemError && error.code === "FileNotFound") return undefined;
    throw error;
  }
}
