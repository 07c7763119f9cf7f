import type { ContentBlock } from "@agentclientprotocol/sdk";
import type { Attachment } from "./protocol";

/** What goes along with the next prompt, shown as removable chips above the input. */
export type Chip =
  | { kind: "file"; label: string; uri: string }
  | { kind: "selection"; label: string; uri: string; text: string; startLine: number; endLine: number }
  | { kind: "image"; label: string; mimeType: string; data: string };

/** The active editor as a chip: its file, or its selection when there is one. */
export type CurrentEditor = Extract<Chip, { kind: "file" | "selection" }>;

/** Images a model reads; anything else pasted is not sent. */
export const IMAGE_TYPES = new Set(["image/png", "image/jpeg", "image/gif", "image/webp"]);
/** A pasted image larger than this is refused (providers cap images near 5 MB). */
export const MAX_IMAGE_BYTES = 5 * 1024 * 1024;

/** The uri a chip stands for: a selection is its file with the lines as a fragment (#L3-L5). */
export function chipUri(chip: Chip): string {
  if (chip.kind === "image") return `image:${chip.label}`;
  if (chip.kind === "selection") return `${chip.uri}#L${chip.startLine}-L${chip.endLine}`;
  return chip.uri;
}

/**
 * The context chips: the active editor's file or selection (offered until the user removes
 * it, and again once they move to another file or selection), and the chips the user added
 * (a dropped file, a pasted image, "Send selection"), which go with one prompt.
 */
export class ContextChips {
  private added: Array<{ id: string; chip: Chip }> = [];
  private current: CurrentEditor | undefined;
  /** The current chip the user removed: not offered again until the editor shows another. */
  private dismissed: string | undefined;
  private nextId = 1;

  constructor(private readonly changed: (attachments: Attachment[]) => void) {}

  /** The active editor changed (or its selection did); undefined when no text editor is active. */
  setCurrent(current: CurrentEditor | undefined): void {
    const before = this.current ? chipUri(this.current) : undefined;
    this.current = current;
    const now = current ? chipUri(current) : undefined;
    if (now !== before) {
      if (now !== this.dismissed) this.dismissed = undefined;
      this.changed(this.list());
    }
  }

  add(chip: Chip): void {
    const uri = chipUri(chip);
    if (chip.kind !== "image" && this.added.some((entry) => chipUri(entry.chip) === uri)) return;
    this.added.push({ id: `c${this.nextId++}`, chip });
    this.changed(this.list());
  }

  remove(id: string): void {
    if (id === "current") {
      this.dismissed = this.current ? chipUri(this.current) : undefined;
    } else {
      this.added = this.added.filter((entry) => entry.id !== id);
    }
    this.changed(this.list());
  }

  /** The current chip when it is offered and not the same as one already added. */
  private offeredCurrent(): CurrentEditor | undefined {
    const current = this.current;
    if (!current) return undefined;
    const uri = chipUri(current);
    if (uri === this.dismissed || this.added.some((entry) => chipUri(entry.chip) === uri)) return undefined;
    return current;
  }

  /** What the view shows. */
  list(): Attachment[] {
    const shown: Attachment[] = this.added.map(({ id, chip }) => view(id, chip, false));
    const current = this.offeredCurrent();
    if (current) shown.unshift(view("current", current, true));
    return shown;
  }

  /**
   * The blocks for the next prompt and the chips' labels; the added chips are used up, the
   * current one stays offered. `skipUris` are files the prompt already links (`@file`).
   */
  take(skipUris: Set<string>): { blocks: ContentBlock[]; labels: string[] } {
    const chips = [this.offeredCurrent(), ...this.added.map((entry) => entry.chip)].filter(
      (chip): chip is Chip => chip !== undefined && !(chip.kind === "file" && skipUris.has(chip.uri)),
    );
    this.added = [];
    this.changed(this.list());
    return { blocks: chips.map(toBlock), labels: chips.map((chip) => chip.label) };
  }
}

function view(id: string, chip: Chip, current: boolean): Attachment {
  return {
    id,
    kind: chip.kind,
    label: chip.label,
    uri: chipUri(chip),
    current,
    thumbnail: chip.kind === "image" ? `data:${chip.mimeType};base64,${chip.data}` : undefined,
  };
}

function toBlock(chip: Chip): ContentBlock {
  switch (chip.kind) {
    case "file":
      return { type: "resource_link", uri: chip.uri, name: chip.label };
    case "selection":
      return { type: "resource", resource: { uri: chipUri(chip), text: chip.text, mimeType: "text/plain" } };
    case "image":
      return { type: "image", data: chip.data, mimeType: chip.mimeType };
  }
}
