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
  if (inGit(relative)) return { refused: `Hermes does not write into .git (${named}).` };
  // The nearest part of the path that exists, with its links resolved, must still be inside.
  let probe = file;
  let existing = file;
  for (;;) {
    try {
      existing = await realpath(probe);
      break;
    } catch {
      const parent = path.dirname(probe);
      if (parent === probe) break;
      probe = existing = parent;
    }
  }
  const resolved = path.relative(root, existing);
  if (resolved.startsWith("..") || path.isAbsolute(resolved)) return { refused: `${named} leads outside the folder ${folder} (through a link).` };
  // A link inside the folder (`docs` -> `.git/hooks`) leads into .git just as well.
  if (inGit(path.join(resolved, path.relative(probe, file)))) return { refused: `${named} leads into .git (through a link).` };
  return { file };
}

/** Whether a relative path goes through a `.git`, in any case: macOS's disk folds it. */
function inGit(relative: string): boolean {
  return relative.split(path.sep).some((part) => part.toLowerCase() === ".git");
}
