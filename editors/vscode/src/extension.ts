import * as path from "node:path";
import * as vscode from "vscode";
import * as acp from "@agentclientprotocol/sdk";
import type { ContentBlock, SessionInfo } from "@agentclientprotocol/sdk";
import { locateAgent } from "./agentLocator";
import { touchesAgent, userAgentSettings } from "./agentSettings";
import { ApiKeys } from "./apiKeys";
import { ChatController, describe } from "./chatController";
import { ChatView } from "./chatView";
import { LastSessions } from "./lastSessions";
import { pickModel } from "./modelPicker";
import { inWords } from "./relativeTime";
import { SessionNames } from "./sessionNames";
import { diskTextIfExists, readTextFile, restoreFile, textIfExists, writeTextFile } from "./editorFiles";
import type { ErrorAction, FromView } from "./protocol";
import { applyToFile, insertAtCursor, newFile } from "./codeBlocks";
import { ContextChips } from "./contextChips";
import { currentEditorChip, droppedChips, pastedImageChip } from "./editorContext";
import { PendingApprovals } from "./pendingApprovals";
import { PseudoterminalSink } from "./pseudoterminals";
import { REVIEW_SCHEME, ReviewDocuments, Reviews, registerReviewCommands } from "./review";
import { StatusItem } from "./statusItem";
import { rankFiles } from "./textEdits";

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
  const reviews = new Reviews(new ReviewDocuments());

  const folder = (): string => {
    const active = vscode.window.activeTextEditor?.document.uri;
    const owner = active ? vscode.workspace.getWorkspaceFolder(active) : undefined;
    return (owner ?? vscode.workspace.workspaceFolders?.[0])?.uri.fsPath ?? process.cwd();
  };
  let sessionFolder = folder();
  const lastSessions = new LastSessions((context.storageUri ?? context.globalStorageUri).fsPath);
  const sessionNames = new SessionNames((context.storageUri ?? context.globalStorageUri).fsPath);
  /** The list the view shows now, with the user's names. */
  let listed: SessionInfo[] = [];

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
    post: (message) => {
      if (message.type !== "sessions") return view.post(message);
      // The user's names and hidden sessions, which the agent does not keep.
      void sessionNames.apply(message.sessions).then((sessions) => {
        listed = sessions;
        view.post({ type: "sessions", sessions });
      });
    },
    files: { readTextFile, writeTextFile },
    fileAccess: { read: textIfExists, readDisk: diskTextIfExists, restore: restoreFile },
    confirm: async (question, action) => (await vscode.window.showWarningMessage(question, { modal: true }, action)) === action,
    terminalSink,
    log: (text) => log.append(text),
    traffic: (direction, message) => traffic.appendLine(`${direction === "in" ? "<-" : "->"} ${JSON.stringify(message)}`),
    stateChanged: (state, mode) => status.show(state, mode),
    permissionsChanged: () => {
      approvals.update();
      void reviews.closeSettled(controller.permissions.pendingIds);
    },
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
    // A slash command (`/steer`, `/queue`, `/compact`) is for the agent, not the model: the
    // chips wait for the next prompt.
    const attached = text.startsWith("/") ? { blocks: [], labels: [] } : chips.take(linked);
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
          const problem = await reviews.show(message.id, pending.request, sessionFolder);
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
      case "renameSession":
        if (await renameSession(message.sessionId)) await relist();
        return;
      case "deleteSession":
        if (await deleteSession(message.sessionId)) await relist();
        return;
      case "findFiles": {
        // More than are shown, so the best (a name starting with the query) is among them.
        const found = await vscode.workspace.findFiles(`**/*${message.query.replace(/[{}[\]*?]/g, "")}*`, "**/{node_modules,.git,.venv}/**", 500);
        const files = rankFiles(message.query, found.map((uri) => vscode.workspace.asRelativePath(uri, false))).slice(0, 20);
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
      case "keepFile":
        return controller.changes.keep(message.path);
      case "keepAll":
        return controller.changes.keepAll();
      case "undoFile":
        return controller.undoChange(message.path);
      case "undoAll":
        return controller.undoChange();
      case "resend":
        // With the agent's rewind the thread first goes back to before that message.
        if (await controller.rewindFor(message)) await prompt(message.text, mentionsIn(message.text));
        return;
      case "ready":
        return;
    }
  }

  async function relist(): Promise<SessionInfo[]> {
    try {
      return await sessionNames.apply(await controller.listSessions());
    } catch (error) {
      view.post({ type: "error", message: describe(error) });
      return [];
    }
  }

  const titleOf = (sessionId: string): string => listed.find((info) => info.sessionId === sessionId)?.title ?? "this session";

  /** A name of the user's choosing, kept by the extension: ACP has no rename. */
  async function renameSession(sessionId: string): Promise<boolean> {
    const name = await vscode.window.showInputBox({
      title: "Hermes: rename the session",
      value: titleOf(sessionId),
      prompt: "The name is kept by VS Code on this machine (the agent has no way to rename a session). Empty: the agent's title.",
    });
    if (name === undefined) return false;
    await sessionNames.rename(sessionId, name);
    return true;
  }

  /** Deletes the agent's stored session where it supports `session/delete`, else hides it from the list. */
  async function deleteSession(sessionId: string): Promise<boolean> {
    const canDelete = Boolean(controller.initializeResponse?.agentCapabilities?.sessionCapabilities?.delete);
    const detail = canDelete
      ? "The agent deletes its stored conversation; it cannot be opened again."
      : "The agent cannot delete sessions: it is removed from this list only, and its history stays on disk.";
    const answer = await vscode.window.showWarningMessage(`Delete “${titleOf(sessionId)}”?`, { modal: true, detail }, "Delete");
    if (answer !== "Delete") return false;
    try {
      if (canDelete && controller.connection) {
        await controller.connection.agent.request(acp.methods.agent.session.delete, { sessionId });
        await sessionNames.forget(sessionId);
      } else {
        await sessionNames.hide(sessionId);
        view.post({ type: "notice", message: "The agent cannot delete sessions; it was removed from the list only." });
      }
    } catch (error) {
      view.post({ type: "error", message: `Deleting the session failed: ${describe(error)}` });
      return false;
    }
    if (controller.sessionId === sessionId) await handle({ type: "newSession" });
    return true;
  }

  /** The palette's list of past sessions: type to search, with Rename and Delete buttons. */
  async function pickSession(): Promise<void> {
    const pick = vscode.window.createQuickPick<vscode.QuickPickItem & { sessionId: string }>();
    pick.title = "Hermes: open a past session";
    pick.placeholder = "Type to search the sessions' titles";
    const rename = { iconPath: new vscode.ThemeIcon("edit"), tooltip: "Rename" };
    const remove = { iconPath: new vscode.ThemeIcon("trash"), tooltip: "Delete" };
    const fill = (sessions: SessionInfo[]): void => {
      const now = new Date();
      pick.items = sessions.map((info) => ({
        label: info.title ?? info.sessionId,
        description: info.updatedAt ? inWords(new Date(info.updatedAt), now) : "",
        sessionId: info.sessionId,
        buttons: [rename, remove],
      }));
    };
    pick.busy = true;
    pick.show();
    fill(await relist());
    pick.busy = false;
    pick.onDidTriggerItemButton(async ({ item, button }) => {
      const changed = button === rename ? await renameSession(item.sessionId) : await deleteSession(item.sessionId);
      pick.show();
      if (changed) fill(await relist());
    });
    pick.onDidAccept(async () => {
      const picked = pick.selectedItems[0];
      pick.hide();
      if (picked) {
        await vscode.commands.executeCommand(`${ChatView.id}.focus`);
        await handle({ type: "loadSession", sessionId: picked.sessionId });
      }
    });
    pick.onDidHide(() => pick.dispose());
  }

  /** The buttons beside a code block's Copy; a problem is said in a warning. */
  async function codeAction(action: "insert" | "apply" | "newFile", code: string, language: string, named: string | null): Promise<void> {
    let problem: string | undefined;
    try {
      if (action === "insert") problem = await insertAtCursor(code);
      else if (action === "newFile") await newFile(code, language);
      else if (named) problem = await applyToFile(code, named, sessionFolder, reviews.documents);
    } catch (error) {
      problem = describe(error);
    }
    if (problem) void vscode.window.showWarningMessage(`Hermes: ${problem}`);
  }

  /** The set-up inside VS Code: a provider, its key into SecretStorage, the agent restarted, then the model. */
  async function setUp(): Promise<void> {
    if (await apiKeys.ask()) {
      await controller.restart(); // the agent reads its keys at start
      if (controller.sessionId) await chooseModel();
    }
  }

  /** The model, from the agent's list for the session (its `model` config option). */
  async function chooseModel(): Promise<void> {
    if (!controller.sessionId) await controller.newSession();
    const picked = await pickModel(controller.configOptions);
    if (picked) await controller.setConfig(picked.configId, picked.value);
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
    vscode.workspace.registerTextDocumentContentProvider(REVIEW_SCHEME, reviews.documents),
    ...registerReviewCommands(reviews, controller.permissions),
    vscode.commands.registerCommand("hermes.open", () => vscode.commands.executeCommand(`${ChatView.id}.focus`)),
    vscode.commands.registerCommand("hermes.newSession", () => handle({ type: "newSession" })),
    vscode.commands.registerCommand("hermes.cancel", () => controller.cancel()),
    vscode.commands.registerCommand("hermes.showLog", () => log.show()),
    vscode.commands.registerCommand("hermes.showTraffic", () => traffic.show()),
    vscode.commands.registerCommand("hermes.setup", () => setUp()),
    vscode.commands.registerCommand("hermes.setApiKey", () => setUp()),
    vscode.commands.registerCommand("hermes.chooseModel", () => chooseModel()),
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
    vscode.commands.registerCommand("hermes.sessions", () => pickSession()),
    vscode.commands.registerCommand("hermes.sendSelection", async () => {
      const editor = vscode.window.activeTextEditor;
      if (!editor || editor.selection.isEmpty) {
        void vscode.window.showInformationMessage("Select some text first.");
        return;
      }
      const chip = currentEditorChip(editor);
      if (!chip) {
        void vscode.window.showInformationMessage("Hermes attaches selections from files of this workspace only.");
        return;
      }
      chips.add(chip);
      await vscode.commands.executeCommand(`${ChatView.id}.focus`);
    }),
    { dispose: () => void controller.dispose() },
  );
}

/** The files a prompt names with `@path`, as the composer finds them. */
function mentionsIn(text: string): string[] {
  return [...text.matchAll(/(?:^|\s)@([^\s@]+)/g)].map((match) => match[1]!);
}

export function deactivate(): void {
  // The controller's dispose (in subscriptions) stops the agent.
}
