import hljs from "highlight.js/lib/core";
import bash from "highlight.js/lib/languages/bash";
import c from "highlight.js/lib/languages/c";
import cpp from "highlight.js/lib/languages/cpp";
import csharp from "highlight.js/lib/languages/csharp";
import css from "highlight.js/lib/languages/css";
import diff from "highlight.js/lib/languages/diff";
import go from "highlight.js/lib/languages/go";
import ini from "highlight.js/lib/languages/ini";
import java from "highlight.js/lib/languages/java";
import javascript from "highlight.js/lib/languages/javascript";
import json from "highlight.js/lib/languages/json";
import kotlin from "highlight.js/lib/languages/kotlin";
import markdown from "highlight.js/lib/languages/markdown";
import php from "highlight.js/lib/languages/php";
import python from "highlight.js/lib/languages/python";
import ruby from "highlight.js/lib/languages/ruby";
import rust from "highlight.js/lib/languages/rust";
import shell from "highlight.js/lib/languages/shell";
import sql from "highlight.js/lib/languages/sql";
import swift from "highlight.js/lib/languages/swift";
import typescript from "highlight.js/lib/languages/typescript";
import xml from "highlight.js/lib/languages/xml";
import yaml from "highlight.js/lib/languages/yaml";

// The common languages only: the core plus these is ~100 kB, all of highlight.js ~1 MB.
const LANGUAGES = { bash, c, cpp, csharp, css, diff, go, ini, java, javascript, json, kotlin, markdown, php, python, ruby, rust, shell, sql, swift, typescript, xml, yaml };
for (const [name, language] of Object.entries(LANGUAGES)) hljs.registerLanguage(name, language);

/** markdown-it's highlight hook: escaped HTML with hljs-* spans, or "" to let it escape as plain. */
export function highlight(code: string, language: string): string {
  if (!language || !hljs.getLanguage(language)) return "";
  try {
    return hljs.highlight(code, { language, ignoreIllegals: true }).value;
  } catch {
    return "";
  }
}

const BY_EXTENSION: Record<string, string> = {
  py: "python", ts: "typescript", tsx: "typescript", js: "javascript", jsx: "javascript", mjs: "javascript", cjs: "javascript",
  json: "json", css: "css", html: "xml", xml: "xml", svg: "xml", md: "markdown", yml: "yaml", yaml: "yaml", toml: "ini",
  ini: "ini", sh: "bash", bash: "bash", go: "go", rs: "rust", java: "java", kt: "kotlin", c: "c", h: "c", cc: "cpp",
  cpp: "cpp", hpp: "cpp", cs: "csharp", rb: "ruby", php: "php", sql: "sql", swift: "swift", diff: "diff", patch: "diff",
};

/** A relative path with an extension and no `.` or `..` steps (the extension checks it again). */
const PATH = /^(?!.*(?:^|\/)\.\.?\/)(?:[\w.-]+\/)*[\w.-]+\.[A-Za-z0-9]+$/;

/**
 * A fence's info string as a language and the file it names, if any: ```python app.py,
 * ```python:app.py, ```python title="app.py", ```app.py (the language from the extension).
 */
export function fenceInfo(info: string): { language: string; path: string | null } {
  const words = info.trim().split(/\s+/).filter(Boolean);
  let language = words[0] ?? "";
  let path: string | null = null;
  const colon = /^([\w+#-]+):(.+)$/.exec(language);
  if (colon) {
    language = colon[1]!;
    path = colon[2]!;
  } else if (PATH.test(language) && !hljs.getLanguage(language)) {
    path = language;
    language = "";
  } else {
    for (const word of words.slice(1)) {
      const candidate = word.replace(/^(?:title|file|path)=/, "").replace(/^["']|["']$/g, "");
      if (PATH.test(candidate)) {
        path = candidate;
        break;
      }
    }
  }
  if (path && !PATH.test(path)) path = null;
  if (!language && path) language = BY_EXTENSION[path.split(".").pop()!.toLowerCase()] ?? "";
  return { language, path };
}
