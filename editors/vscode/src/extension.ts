import * as path from "node:path";
import * as vscode from "vscode";
import type { ContentBlock } from "@agentclientprotocol/sdk";
import { locateAgent } from "./agentLocator";
import { touchesAgent, userAgentSettings } from "./agentSettings";
import { ApiKeys } from "./apiKeys";
import { ChatController, describe } from "./chatController";
import { ChatView } from "./chatView";
import { LastSessions } from "./lastSessions";
import { readTextFile, writeTextFile } from "./editorFiles";
import type { ErrorAction, FromView } from "./protocol";
import { applyToFile, insertAtCursor, newFile } from "./codeBlocks";
import { ContextChips } from "./contextChips";
import { currentEditorChip, droppedChips, pastedImageChip } from "./editorContext";
import { PendingApprovals } from "./pendingApprovals";
import { PseudoterminalSink } from "./pseudoterminals";
import { REVIEW_SCHEME, ReviewDocuments, reviewEdit } from "./review";
import { StatusItem } from "./statusItem";

/** Where earlier versions kept each folder's last session; read when the file has none. */
const SESSION_KEY = "hermes.sessions";

export function activate(context: vscode.ExtensionContext): void {
  const channel = vscode.window.createOutputChannel("Hermes");
  const trafficChannel = vscode.window.createOutputChannel("Hermes ACP traffic", "jsonl");
  // The agent's last words (its exit, stderr) arrive after VS Code has disposed the channels
  // on a reload; writing to a disposed channel logs "Channel has been closed". Once closing,
  // nothing more is written.
  let closing = false;
  context.subscriptions.push({ dispose: () => (closing = true) });
  const log = {
    append: (text: string): void => {
      if (!closing) channel.append(text);
    },
    appendLine: (text: string): void => {
      if (!closing) channel.appendLine(text);
    },
    show: () => channel.show(),
  };
  const traffic = {
    appendLine: (text: string): void => {
      if (!closing) trafficChannel.appendLine(text);
    },
    show: () => trafficChannel.show(),
  };
  const status = new StatusItem();
  const reviews = new ReviewDocuments();

  const folder = (): string => {
    const active = vscode.window.activeTextEditor?.document.uri;
    const owner = active ? vscode.workspace.getWorkspaceFolder(active) : undefined;
    return (owner ?? vscode.workspace.workspaceFolders?.[0])?.uri.fsPath ?? process.cwd();
  };
  let sessionFolder = folder();
  const lastSessions = new LastSessions((context.storageUri ?? context.globalStorageUri).fsPath);

  const terminalSink = new PseudoterminalSink();
  const apiKeys = new ApiKeys(context.secrets, context.globalState);
  let lastPrompt: { text: string; mentions: string[] } | undefined;

  const view = new ChatView(context.extensionUri, (message) => void handle(message), () => void resume());
  const chips = new ContextChips((attachments) => view.post({ type: "attachments", attachments }));
  const followEditor = (): void => chips.setCurrent(currentEditorChip(vscode.window.activeTextEditor));
  followEditor();
  const controller = new ChatController({
    locateAgent: async () => {
      const settings = userAgentSettings();
      // The stored keys first; a key the user put in hermes.env themselves still wins.
      settings.env = { ...(await apiKeys.environment()), ...(settings.env ?? {}) };
      // Only a trusted workspace's own .venv may supply the agent (blocked() keeps the rest out).
      const folders = vscode.workspace.isTrusted ? (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath) : [];
      return locateAgent(settings, folders);
    },
    blocked: () =>
      vscode.workspace.isTrusted
        ? undefined
        : {
            message:
              "This folder is open in Restricted Mode, so Hermes does not start: the agent reads the folder's files and runs commands in it. Trust the folder to use Hermes.",
            action: "trust",
          },
    cwd: () => sessionFolder,
    post: (message) => view.post(message),
    files: { readTextFile, writeTextFile },
    terminalSink,
    log: (text) => log.append(text),
    traffic: (direction, message) => traffic.appendLine(`${direction === "in" ? "<-" : "->"} ${JSON.stringify(message)}`),
    stateChanged: (state, mode) => status.show(state, mode),
    permissionsChanged: () => approvals.update(),
    sessionChosen: (sessionId) =>
      lastSessions.remember(sessionFolder, sessionId).catch((error: unknown) => log.appendLine(`could not remember the session: ${describe(error)}`)),
  });

  let resumed = false;
  async function resume(): Promise<void> {
    if (resumed) {
      return;
    }
    resumed = true;
    const last =
      (await lastSessions.get(sessionFolder)) ?? context.workspaceState.get<Record<string, string>>(SESSION_KEY, {})[sessionFolder];
    try {
      if (!(last && (await controller.loadSession(last)))) {
        await controller.newSession();
      }
    } catch (error) {
      log.appendLine(`could not start: ${describe(error)}`);
    }
  }

  const approvals = new PendingApprovals(controller.permissions, view, () => vscode.commands.executeCommand(`${ChatView.id}.focus`));
  view.visibilityChanged = () => approvals.update();

  async function prompt(text: string, mentions: string[]): Promise<void> {
    lastPrompt = { text, mentions };
    const blocks: ContentBlock[] = [{ type: "text", text }];
    const linked = new Set<string>();
    for (const mention of mentions) {
      const uri = vscode.Uri.file(path.resolve(sessionFolder, mention)).toString();
      linked.add(uri);
      blocks.push({ type: "resource_link", uri, name: mention });
    }
    const attached = chips.take(linked);
    blocks.push(...attached.blocks);
    const shown = attached.labels.length ? `${text}\n\nAttached: ${attached.labels.join(", ")}` : text;
    await controller.prompt(blocks, shown, text);
  }

  async function handle(message: FromView): Promise<void> {
    switch (message.type) {
      case "prompt":
        return prompt(message.text, message.mentions);
      case "cancel":
        return controller.cancel();
      case "permission":
        controller.permissions.answer(message.id, message.optionId);
        return;
      case "review": {
        const pending = controller.permissions.get(message.id);
        if (pending) {
          const problem = await reviewEdit(pending.request, sessionFolder, reviews);
          if (problem) {
            void vscode.window.showWarningMessage(problem);
          }
        }
        return;
      }
      case "setConfig":
        return controller.setConfig(message.configId, message.value);
      case "open": {
        const file = vscode.Uri.file(path.resolve(sessionFolder, message.path));
        const line = Math.max(0, (message.line ?? 1) - 1);
        try {
          await vscode.window.showTextDocument(file, { selection: new vscode.Range(line, 0, line, 0), preview: true });
        } catch {
          void vscode.window.showWarningMessage(`Hermes: ${message.path} could not be opened.`);
        }
        return;
      }
      case "newSession":
        sessionFolder = folder();
        await controller.newSession();
        return;
      case "listSessions":
        await controller.listSessions().catch((error) => view.post({ type: "error", message: describe(error) }));
        return;
      case "loadSession":
        await controller.loadSession(message.sessionId);
        return;
      case "findFiles": {
        const found = await vscode.workspace.findFiles(`**/*${message.query.replace(/[{}[\]*?]/g, "")}*`, "**/{node_modules,.git,.venv}/**", 20);
        const files = found.map((uri) => vscode.workspace.asRelativePath(uri, false));
        view.post({ type: "files", query: message.query, files });
        return;
      }
      case "removeAttachment":
        chips.remove(message.id);
        return;
      case "dropFiles": {
        const dropped = await droppedChips(message.uris);
        dropped.chips.forEach((chip) => chips.add(chip));
        if (dropped.refused.length) view.post({ type: "notice", message: `Not attached (only files of this workspace can be): ${dropped.refused.join(", ")}` });
        return;
      }
      case "pasteImage": {
        const chip = pastedImageChip(message.mimeType, message.data, message.name);
        if (typeof chip === "string") view.post({ type: "notice", message: chip });
        else chips.add(chip);
        return;
      }
      case "codeAction":
        return codeAction(message.action, message.code, message.language, message.path);
      case "copy":
        await vscode.env.clipboard.writeText(message.text);
        return;
      case "setup":
        return setUp();
      case "action":
        return act(message.action);
      case "retry":
        if (lastPrompt) await prompt(lastPrompt.text, lastPrompt.mentions);
        return;
      case "ready":
        return;
    }
  }

  /** The buttons beside a code block's Copy; a problem is said in a warning. */
  async function codeAction(action: "insert" | "apply" | "newFile", code: string, language: string, named: string | null): Promise<void> {
    let problem: string | undefined;
    try {
      if (action === "insert") problem = await insertAtCursor(code);
      else if (action === "newFile") await newFile(code, language);
      else if (named) problem = await applyToFile(code, named, sessionFolder, reviews);
    } catch (error) {
      problem = describe(error);
    }
    if (problem) void vscode.window.showWarningMessage(`Hermes: ${problem}`);
  }

  /** The key set-up inside VS Code: a provider, its key into SecretStorage, the agent restarted. */
  async function setUp(): Promise<void> {
    if (await apiKeys.ask()) {
      await controller.restart(); // the agent reads its keys at start
    }
  }

  async function act(action: ErrorAction): Promise<void> {
    switch (action) {
      case "setup":
        return setUp();
      case "install":
        await vscode.commands.executeCommand("workbench.action.openSettings", "hermes.command");
        return;
      case "trust":
        await vscode.commands.executeCommand("workbench.trust.manage");
        return;
      case "log":
        log.show();
        return;
      case "restart":
        return controller.restart();
      case "retry":
        return handle({ type: "retry" });
    }
  }

  let agentSettingsSeen = JSON.stringify(userAgentSettings());
  context.subscriptions.push(
    channel,
    trafficChannel,
    status,
    vscode.window.registerWebviewViewProvider(ChatView.id, view, { webviewOptions: { retainContextWhenHidden: true } }),
    vscode.workspace.registerTextDocumentContentProvider(REVIEW_SCHEME, reviews),
    vscode.commands.registerCommand("hermes.open", () => vscode.commands.executeCommand(`${ChatView.id}.focus`)),
    vscode.commands.registerCommand("hermes.newSession", () => handle({ type: "newSession" })),
    vscode.commands.registerCommand("hermes.cancel", () => controller.cancel()),
    vscode.commands.registerCommand("hermes.showLog", () => log.show()),
    vscode.commands.registerCommand("hermes.showTraffic", () => traffic.show()),
    vscode.commands.registerCommand("hermes.setup", () => setUp()),
    vscode.commands.registerCommand("hermes.setApiKey", () => setUp()),
    vscode.commands.registerCommand("hermes.restart", () => controller.restart()),
    vscode.workspace.onDidGrantWorkspaceTrust(() => void controller.restart()),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (!touchesAgent(event)) return;
      // Only the user's own values start the agent: a workspace's settings.json changing
      // them fires this event too, and must not restart it (a prompt sent meanwhile was lost).
      const now = JSON.stringify(userAgentSettings());
      if (now === agentSettingsSeen) return;
      agentSettingsSeen = now;
      if (controller.connection) {
        log.appendLine("the agent's settings changed: restarting it");
        void controller.restart();
      }
    }),
    approvals,
    terminalSink,
    vscode.window.onDidChangeActiveTextEditor(followEditor),
    vscode.window.onDidChangeTextEditorSelection((event) => {
      if (event.textEditor === vscode.window.activeTextEditor) followEditor();
    }),
    vscode.commands.registerCommand("hermes.sessions", async () => {
      const sessions = await controller.listSessions();
      const picked = await vscode.window.showQuickPick(
        sessions.map((s) => ({ label: s.title ?? s.sessionId, description: s.updatedAt ?? "", sessionId: s.sessionId })),
        { title: "Hermes: open a past session" },
      );
      if (picked) {
        await vscode.commands.executeCommand(`${ChatView.id}.focus`);
        await handle({ type: "loadSession", sessionId: picked.sessionId });
      }
    }),
    vscode.commands.registerCommand("hermes.sendSelection", async () => {
      const editor = vscode.window.activeTextEditor;
      if (!editor || editor.selection.isEmpty) {
        void vscode.window.showInformationMessage("Select some text first.");
        return;
      }
      const chip = currentEditorChip(editor);
      if (chip) chips.add(chip);
      await vscode.commands.executeCommand(`${ChatView.id}.focus`);
    }),
    { dispose: () => void controller.dispose() },
  );
}

export function deactivate(): void {
  // The controller's dispose (in subscriptions) stops the agent.
}
