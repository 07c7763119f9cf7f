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

/** Lines added and removed from `before` to `after` (a longest-common-subsequence count). */
export function lineChanges(before: string, after: string): { added: number; removed: number } {
  const a = before === "" ? [] : before.replace(/\n$/, "").split("\n");
  const b = after === "" ? [] : after.replace(/\n$/, "").split("\n");
  // Common head and tail first: an edit usually touches a few lines of a long file.
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let endA = a.length;
  let endB = b.length;
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) {
    endA--;
    endB--;
  }
  const x = a.slice(start, endA);
  const y = b.slice(start, endB);
  if (x.length * y.length > 4_000_000) return { added: y.length, removed: x.length }; // too big to align
  let previous = new Array<number>(y.length + 1).fill(0);
  for (let i = 1; i <= x.length; i++) {
    const row = new Array<number>(y.length + 1).fill(0);
    for (let j = 1; j <= y.length; j++) {
      row[j] = x[i - 1] === y[j - 1] ? previous[j - 1]! + 1 : Math.max(previous[j]!, row[j - 1]!);
    }
    previous = row;
  }
  const common = previous[y.length]!;
  return { added: y.length - common, removed: x.length - common };
}

/** How the agent's rewind list shows a prompt: one line, whitespace collapsed, 70 characters. */
export function promptPreview(text: string): string {
  const line = text.split(/\s+/).filter(Boolean).join(" ");
  return line.length <= 70 ? line : `${line.slice(0, 69)}…`;
}

/**
 * Files for an `@query` completion, best first: a name that starts with the query, then a
 * name that contains it, then a path that does; shorter paths first within each.
 */
export function rankFiles(query: string, files: string[]): string[] {
  const q = query.toLowerCase();
  const rank = (file: string): number => {
    const name = file.slice(file.lastIndexOf("/") + 1).toLowerCase();
    return name.startsWith(q) ? 0 : name.includes(q) ? 1 : 2;
  };
  return [...files].sort((a, b) => rank(a) - rank(b) || a.length - b.length || a.localeCompare(b));
}
