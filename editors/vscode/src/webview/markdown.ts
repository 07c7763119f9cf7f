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
