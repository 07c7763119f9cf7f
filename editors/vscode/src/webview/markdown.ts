import MarkdownIt from "markdown-it";

// html: false escapes any HTML in the model's text; markdown-it's validateLink drops
// javascript:, vbscript:, file: and non-image data: links. The CSP blocks the rest.
const md = new MarkdownIt({ html: false, linkify: false, breaks: false });

/** Markdown to safe HTML, with a copy button on each code block. */
export function renderMarkdown(text: string): string {
  return md.render(text);
}

export function addCopyButtons(root: HTMLElement, copy: (text: string) => void): void {
  for (const pre of Array.from(root.querySelectorAll("pre"))) {
    if (pre.querySelector("button.copy")) {
      continue;
    }
    const button = document.createElement("button");
    button.className = "copy";
    button.textContent = "Copy";
    button.addEventListener("click", () => {
      copy(pre.querySelector("code")?.textContent ?? pre.textContent ?? "");
      button.textContent = "Copied";
      setTimeout(() => (button.textContent = "Copy"), 1200);
    });
    pre.prepend(button);
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
