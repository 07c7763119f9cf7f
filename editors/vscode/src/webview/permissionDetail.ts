import type { RequestPermissionRequest } from "@agentclientprotocol/sdk";

/**
 * What a permission card shows under its title: the text the agent wrote for it (the
 * command or arguments whole, every character that draws nothing already escaped), else
 * the command or path from the raw input, escaped here. `rawInput` is the call's data as
 * the tool gets it: drawn as it is, U+202E showed the rest of a command reversed and
 * `./build\u034f.sh` drew as `./build.sh`.
 */
export function permissionDetail(toolCall: RequestPermissionRequest["toolCall"]): { kind: "command" | "path"; text: string } | null {
  const written = (toolCall.content ?? []).flatMap((item) =>
    item.type === "content" && item.content.type === "text" ? [unfenced(item.content.text)] : [],
  );
  if (written.length) return { kind: "command", text: written.join("\n\n") };
  const input = toolCall.rawInput as Record<string, unknown> | undefined;
  if (typeof input?.command === "string") return { kind: "command", text: escapeUndrawn(input.command) };
  if (typeof input?.path === "string") return { kind: "path", text: escapeUndrawn(input.path) };
  return null;
}

// Controls but newline and tab, format (bidi, zero-width), separators, private use and
// unassigned code points; blanks but the space; the default-ignorable marks and fillers.
const UNDRAWN =
  /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Co}\p{Cn}\p{Zs}\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u3164\ufe00-\ufe0f\uffa0\u{e0000}-\u{e0fff}]/gu;

/** `text` with every character that draws nothing, or as a space that is none, as an escape. */
export function escapeUndrawn(text: string): string {
  return text.replace(UNDRAWN, (char) => {
    if (char === "\n" || char === "\t" || char === " ") return char;
    const code = char.codePointAt(0)!;
    const hex = code.toString(16);
    return code <= 0xff ? `\\x${hex.padStart(2, "0")}` : code <= 0xffff ? `\\u${hex.padStart(4, "0")}` : `\\U${hex.padStart(8, "0")}`;
  });
}

/** A markdown code block's inside (the agent fences what it shows); other text as it is. */
function unfenced(text: string): string {
  const fenced = /^(`{3,})\n([\s\S]*?)\n?\1$/.exec(text);
  return fenced ? fenced[2]! : text;
}
