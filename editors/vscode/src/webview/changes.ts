/**
 * The files the agent changed and the user has not decided on, pinned above the composer:
 * each with its +/- line counts, Keep and Undo; Keep all and Undo all for the lot.
 */
import type { ChangedFile, FromView } from "../protocol";
import { h } from "./dom";

type Post = (message: FromView) => void;

export class ChangesPanel {
  readonly element: HTMLElement;
  /** Paths under it are shown relative. */
  cwd = "";

  constructor(private readonly post: Post) {
    this.element = h("section", { id: "changes", "aria-label": "Files changed by Hermes", hidden: true });
  }

  show(files: ChangedFile[]): void {
    this.element.hidden = files.length === 0;
    const count = `${files.length} file${files.length === 1 ? "" : "s"} changed`;
    this.element.replaceChildren(
      h(
        "div",
        { className: "changes-head" },
        h("span", { className: "count" }, count),
        h("span", { className: "spacer" }),
        h("button", { className: "keep-all", onclick: () => this.post({ type: "keepAll" }) }, "Keep all"),
        h("button", { className: "undo-all", onclick: () => this.post({ type: "undoAll" }) }, "Undo all"),
      ),
      h("ul", {}, ...files.map((file) => this.row(file))),
    );
  }

  private row(file: ChangedFile): HTMLElement {
    const name = this.shortPath(file.path);
    return h(
      "li",
      { "data-path": file.path },
      h("a", { href: "#", className: "file", title: file.path, onclick: (event: Event) => (event.preventDefault(), this.post({ type: "open", path: file.path })) }, name),
      file.created ? h("span", { className: "created" }, "new") : null,
      h("span", { className: "added", "aria-label": `${file.added} lines added` }, `+${file.added}`),
      h("span", { className: "removed", "aria-label": `${file.removed} lines removed` }, `−${file.removed}`),
      h("span", { className: "spacer" }),
      h("button", { className: "keep", "aria-label": `Keep the changes to ${name}`, onclick: () => this.post({ type: "keepFile", path: file.path }) }, "Keep"),
      h(
        "button",
        { className: "undo", "aria-label": file.created ? `Undo: delete ${name}` : `Undo the changes to ${name}`, onclick: () => this.post({ type: "undoFile", path: file.path }) },
        "Undo",
      ),
    );
  }

  private shortPath(file: string): string {
    const prefix = this.cwd.endsWith("/") ? this.cwd : `${this.cwd}/`;
    return this.cwd && file.startsWith(prefix) ? file.slice(prefix.length) : file;
  }
}
