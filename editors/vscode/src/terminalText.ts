/**
 * What the "Hermes" terminal may be sent of a command's text. That terminal is xterm.js: it
 * obeys what it is written, and the command line and its output are the model's. `\x1b[1A`
 * moves up into the `$ command` line above and `\x1b[2K` erases it, so output could make the
 * command shown read as another (`$ npm test` over the `curl … | sh` that ran, in auto, where
 * that line is all the user sees); OSC sequences set the title, links and, where enabled,
 * the clipboard. Colours (SGR) and what stays on the current line (`\r`, `\b`, erase to the
 * end of the line: progress bars) are kept; every other control character is shown escaped.
 */

// SGR (colours, bold) and EL (erase in line): neither leaves the current line.
const KEPT_SEQUENCE = /^\x1b\[[0-9;:]*[mK]/;
// C0 and C1 controls, DEL; the line ends and blanks that stay on the line are kept.
const CONTROL = /[\x00-\x08\x0b-\x0c\x0e-\x1f\x7f-\x9f]/;

function escaped(char: string): string {
  return `\\x${char.charCodeAt(0).toString(16).padStart(2, "0")}`;
}

/** A command's output as the terminal may draw it: colours and same-line moves kept. */
export function drawableOutput(text: string): string {
  let out = "";
  for (let i = 0; i < text.length; i++) {
    const char = text[i]!;
    if (char === "\x1b") {
      const kept = KEPT_SEQUENCE.exec(text.slice(i, i + 64));
      if (kept) {
        out += kept[0];
        i += kept[0].length - 1;
        continue;
      }
    }
    out += char === "\b" || !CONTROL.test(char) ? char : escaped(char);
  }
  return out;
}

/** The command line for the `$ …` line: every control character escaped, `\b` and `\r` too. */
export function drawableCommand(text: string): string {
  return text.replace(/\r?\n/g, "\n").replace(/[\x00-\x09\x0b-\x1f\x7f-\x9f]/g, escaped);
}
