import * as path from "node:path";
import * as vscode from "vscode";
import { currentText, writeTextFile } from "./editorFiles";
import type { ReviewDocuments } from "./review";
import { targetInside } from "./safePaths";

/** highlight.js names that differ from VS Code's language ids. */
const LANGUAGE_IDS: Record<string, string> = { bash: "shellscript", shell: "shellscript", xml: "html" };

/** Insert at cursor: the code replaces the selections of the last active text editor. */
export async function insertAtCursor(code: string): Promise<string | undefined> {
  const editor = vscode.window.activeTextEditor ?? vscode.window.visibleTextEditors[0];
  if (!editor) return "Open a file in the editor to insert the code there.";
  const done = await editor.edit((edit) => {
    for (const selection of editor.selections) edit.replace(selection, code);
  });
  if (!done) return "The editor refused the insertion.";
  await vscode.window.showTextDocument(editor.document, editor.viewColumn);
  return undefined;
}

/** New file: an untitled editor with the code, in its language. */
export async function newFile(code: string, language: string): Promise<void> {
  const languageId = LANGUAGE_IDS[language] ?? (language || "plaintext");
  let document: vscode.TextDocument;
  try {
    document = await vscode.workspace.openTextDocument({ language: languageId, content: code });
  } catch {
    document = await vscode.workspace.openTextDocument({ content: code }); // a language VS Code does not know
  }
  await vscode.window.showTextDocument(document);
}

/**
 * Apply to file: the diff of the file's current text against the code block opens first,
 * and the file is written only when the user says Apply (undoable, then saved).
 */
export async function applyToFile(code: string, named: string, folder: string, reviews: ReviewDocuments): Promise<string | undefined> {
  const target = await targetInside(folder, named);
  if ("refused" in target) return target.refused;
  let before: string | undefined;
  try {
    before = await currentText(target.file);
  } catch {
    before = undefined; // a new file
  }
  const content = code.endsWith("\n") ? code : `${code}\n`;
  if (before === content) {
    void vscode.window.showInformationMessage(`${named} already has this content.`);
    return undefined;
  }
  const name = path.basename(target.file);
  await vscode.commands.executeCommand(
    "vscode.diff",
    reviews.add(name, before ?? ""),
    reviews.add(name, content),
    `${name}: current ↔ code block from Hermes`,
    { preview: true },
  );
  const what = before === undefined ? `Create ${named} with the code block?` : `Replace the content of ${named} with the code block?`;
  const answer = await vscode.window.showInformationMessage(`Hermes: ${what} The diff shows the change.`, "Apply", "Cancel");
  if (answer !== "Apply") return undefined;
  await writeTextFile({ sessionId: "", path: target.file, content });
  await vscode.window.showTextDocument(vscode.Uri.file(target.file), { preview: false });
  return undefined;
}
