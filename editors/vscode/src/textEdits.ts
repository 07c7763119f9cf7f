/** Pure text helpers for the editor side of ACP (no VS Code API, so tests run them directly). */

/** Lines `line` (1-based) .. `line + limit - 1` of `text`, as ACP's fs/read_text_file asks. */
export function sliceLines(text: string, line?: number | null, limit?: number | null): string {
  if (!line && !limit) {
    return text;
  }
  const lines = text.split(/(?<=\n)/);
  const start = Math.max(0, (line ?? 1) - 1);
  const end = limit ? start + limit : lines.length;
  return lines.slice(start, end).join("");
}

/**
 * The text an edit the agent asks permission for would produce, from its arguments
 * (`write_file {content}`, `patch {old_text, new_text, replace_all?}`); undefined when the
 * patch's old text is not in `current`.
 */
export function proposedText(current: string, input: Record<string, unknown>): string | undefined {
  if (typeof input.content === "string") {
    return input.content;
  }
  if (typeof input.old_text === "string" && typeof input.new_text === "string") {
    if (input.old_text === "" || !current.includes(input.old_text)) {
      return undefined;
    }
    const replacement = input.new_text;
    return input.replace_all === true
      ? current.split(input.old_text).join(replacement)
      : current.replace(input.old_text, () => replacement);
  }
  return undefined;
}
