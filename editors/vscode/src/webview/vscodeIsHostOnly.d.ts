// What `import … from "vscode"` finds in the webview (src/webview/tsconfig.json maps it
// here): nothing. The `vscode` API exists only in the extension host; the webview talks to
// it through messages (../protocol.ts).
export {};
