import MarkdownIt from "markdown-it";
import type { CodeAction } from "../protocol";
import { fenceInfo, highlight } from "./highlight";

// html: false escapes any HTML in the model's text; markdown-it's validateLink drops
// javascript:, vbscript:, file: and non-image data: links. The CSP blocks the rest.
// highlight.js escapes the code it wraps in its spans.
const md = new MarkdownIt({ html: false, linkify: false, breaks: false, highlight });

// A fence that names a file (```python app.py, ```app.py, ```ts:src/x.ts) keeps the path on
// the <code> as data-path, for Apply to file; the language stays the class.
const defaultFence = md.renderer.rules.fence!;
md.renderer.rules.fence = (tokens, index, options, env, self) => {
  const token = tokens[index]!;
  const { language, path } = fenceInfo(token.info);
  token.info = language;
  if (path) token.attrSet("data-path", path);
  return defaultFence(tokens, index, options, env, self);
};

/** Markdown to safe HTML, code blocks highlighted. */
export function renderMarkdown(text: string): string {
  return md.render(text);
}

export interface CodeButtons {
  copy(text: string): void;
  action(action: CodeAction, code: string, language: string, path: string | null): void;
}

/** Copy, Insert at cursor, Apply to file (when the block names one) and New file on each code block. */
export function addCopyButtons(root: HTMLElement, buttons: CodeButtons): void {
  for (const pre of Array.from(root.querySelectorAll("pre"))) {
    if (pre.querySelector(".code-actions")) {
      continue;
    }
    const code = pre.querySelector("code");
    const text = (): string => code?.textContent ?? pre.textContent ?? "";
    const language = /(?:^|\s)language-([\w+#.-]+)/.exec(code?.className ?? "")?.[1] ?? "";
    const path = code?.dataset.path ?? null;
    const bar = document.createElement("div");
    bar.className = "code-actions";
    const button = (label: string, className: string, title: string, run: (button: HTMLButtonElement) => void): void => {
      const element = document.createElement("button");
      element.className = className;
      element.textContent = label;
      element.title = title;
      element.addEventListener("click", () => run(element));
      bar.append(element);
    };
    button("Copy", "copy", "Copy the code", (element) => {
      buttons.copy(text());
      element.textContent = "Copied";
      setTimeout(() => (element.textContent = "Copy"), 1200);
    });
    button("Insert", "insert", "Insert at the cursor in the editor", () => buttons.action("insert", text(), language, path));
    if (path) button("Apply", "apply", `Apply to ${path} (after reviewing the diff)`, () => buttons.action("apply", text(), language, path));
    button("New file", "new-file", "Open the code in a new untitled editor", () => buttons.action("newFile", text(), language, path));
    pre.prepend(bar);
  }
}

/** `path/to/file.py` or `file.py:12` (inline code in an answer): a file reference. */
const FILE_REFERENCE = /^(?!\/\/)([\w.\-/]+\.[A-Za-z0-9]+)(?::(\d+))?$/;

/**
 * Inline code that names a file (`calc.py`, `src/app.ts:42`) becomes a link that opens the
 * editor there. The extension resolves the path inside the session's folder.
 */
export function linkFileReferences(root: HTMLElement, open: (path: string, line: number | null) => void): void {
  for (const code of Array.from(root.querySelectorAll<HTMLElement>(":not(pre) > code"))) {
    const match = FILE_REFERENCE.exec(code.textContent ?? "");
    if (!match || code.parentElement?.tagName === "A") continue;
    const link = document.createElement("a");
    link.href = "#";
    link.className = "file-reference";
    link.title = `Open ${match[0]}`;
    link.addEventListener("click", (event) => {
      event.preventDefault();
      open(match[1]!, match[2] ? Number(match[2]) : null);
    });
    code.replaceWith(link);
    link.append(code);
  }
}
