// Bundles the extension (Node, CJS: VS Code 1.100 loads CommonJS; the ACP SDK is ESM)
// and the webview script (browser, IIFE).
import * as esbuild from "esbuild";

const production = process.argv.includes("--production");
const common = { bundle: true, sourcemap: !production, minify: production, logLevel: "warning", target: "es2022" };

await Promise.all([
  esbuild.build({ ...common, entryPoints: ["src/extension.ts"], outfile: "dist/extension.js", platform: "node", format: "cjs", external: ["vscode"] }),
  esbuild.build({ ...common, entryPoints: ["src/webview/main.ts"], outfile: "dist/webview.js", platform: "browser", format: "iife" }),
]);
