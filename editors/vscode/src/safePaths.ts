import { realpath } from "node:fs/promises";
import * as path from "node:path";

/**
 * Where a path the model named may be written: inside `folder` (symlinks resolved), and never
 * in `.git` (hooks run code). Returns the absolute path or why not. The answer is the
 * model's text, so the path is the attacker's until proven otherwise.
 */
export async function targetInside(folder: string, named: string): Promise<{ file: string } | { refused: string }> {
  const root = await realpath(folder);
  const file = path.resolve(root, named);
  const relative = path.relative(root, file);
  if (!relative || relative.startsWith("..") || path.isAbsolute(relative)) return { refused: `${named} is outside the folder ${folder}.` };
  if (relative.split(path.sep).includes(".git")) return { refused: `Hermes does not write into .git (${named}).` };
  // The nearest part of the path that exists, with its links resolved, must still be inside.
  let existing = file;
  for (;;) {
    try {
      existing = await realpath(existing);
      break;
    } catch {
      const parent = path.dirname(existing);
      if (parent === existing) break;
      existing = parent;
    }
  }
  const resolved = path.relative(root, existing);
  if (resolved.startsWith("..") || path.isAbsolute(resolved)) return { refused: `${named} leads outside the folder ${folder} (through a link).` };
  return { file };
}
