import { relative } from "node:path";
import * as acp from "@agentclientprotocol/sdk";
import type {
  ContentBlock,
  InitializeResponse,
  SessionConfigOption,
  SessionInfo,
  SessionNotification,
  StopReason,
} from "@agentclientprotocol/sdk";
import { AgentConnection, type ClientSide } from "./agentConnection";
import { INSTALL_HELP, type AgentCommand } from "./agentLocator";
import { PermissionBroker } from "./permissions";
import type { AgentState, ErrorAction, Resend, ToView } from "./protocol";
import { rewindCapability, rewindBefore } from "./rewind";
import { Terminals, type TerminalSink } from "./terminals";
import type { TrafficListener } from "./traffic";
import { TurnChanges, type FileAccess } from "./turnChanges";

/** ACP's "authentication required" error code. */
export const AUTH_REQUIRED = -32000;

/** What the controller needs from its host (VS Code, or a test). */
export interface ControllerHost {
  locateAgent(): AgentCommand | undefined | Promise<AgentCommand | undefined>;
  /** Why the agent must not start now (an untrusted workspace), or undefined. */
  blocked?(): { message: string; action: ErrorAction } | undefined;
  cwd(): string;
  post(message: ToView): void;
  files: Pick<ClientSide, "readTextFile" | "writeTextFile">;
  /** Reads and restores files for Undo of the agent's changes. */
  fileAccess: FileAccess;
  /** Asks the user to agree to something that loses their work; no answer is no. */
  confirm?(question: string, action: string): Promise<boolean>;
  terminalSink?: TerminalSink;
  log?(text: string): void;
  traffic?: TrafficListener;
  stateChanged?(state: AgentState, mode: string | undefined): void;
  /** The view is about to show this session; it is told only once this settles, so a window
   * reload right after the view shows a session comes back to that session. */
  sessionChosen?(sessionId: string): PromiseLike<void>;
  /** A permission request came or went. */
  permissionsChanged?(): void;
}

/** An error the view has already been told about: callers do not report it again. */
export class ShownError extends Error {}

/** Restarts after crashes in a row (no turn finished between them) before giving up. */
const MAX_CRASH_RESTARTS = 3;

export class ChatController {
  state: AgentState = "stopped";
  connection: AgentConnection | undefined;
  initializeResponse: InitializeResponse | undefined;
  sessionId: string | undefined;
  configOptions: SessionConfigOption[] = [];
  readonly permissions: PermissionBroker;
  readonly terminals: Terminals;
  /** The agent's file changes the user has not kept or undone yet. */
  readonly changes: TurnChanges;
  /** performance.now() marks for the benchmarks. */
  readonly marks: { spawned?: number; initialized?: number } = {};
  private starting: Promise<AgentConnection> | undefined;
  /** Prompts sent and not yet answered (the agent queues those sent during a turn). */
  private turns = 0;
  private crashes = 0;
  /** Connections we stopped on purpose: their exit is not a crash. */
  private readonly stopping = new WeakSet<AgentConnection>();

  constructor(private readonly host: ControllerHost) {
    this.permissions = new PermissionBroker(
      (pending) => {
        host.post({ type: "permission", id: pending.id, request: pending.request, reviewable: isEdit(pending.request.toolCall.kind) });
        host.permissionsChanged?.();
      },
      (id, optionId) => {
        host.post({ type: "permissionSettled", id, optionId });
        host.permissionsChanged?.();
      },
    );
    this.changes = new TurnChanges(host.fileAccess, (files) => host.post({ type: "changes", files }));
    const sink = host.terminalSink;
    this.terminals = new Terminals({
      opened: (id, line) => sink?.opened(id, line),
      output: (id, text) => {
        sink?.output(id, text);
        host.post({ type: "terminalOutput", terminalId: id, text });
      },
      exited: (id, status) => {
        sink?.exited(id, status);
        host.post({ type: "terminalExit", terminalId: id, exitCode: status.exitCode ?? null, signal: status.signal ?? null });
      },
      released: (id) => sink?.released(id),
    });
  }

  get mode(): string | undefined {
    const option = this.configOptions.find((o) => o.category === "mode");
    return option && "currentValue" in option ? String(option.currentValue) : undefined;
  }

  private setState(state: AgentState, detail?: string): void {
    this.state = state;
    this.host.post({ type: "state", state, detail });
    this.host.stateChanged?.(state, this.mode);
  }

  /** Starts the agent and answers its `initialize` once; later calls reuse it. */
  async ensureStarted(): Promise<AgentConnection> {
    if (this.connection?.alive) {
      return this.connection;
    }
    if (!this.starting) {
      this.starting = this.start().finally(() => (this.starting = undefined));
    }
    return this.starting;
  }

  private async start(): Promise<AgentConnection> {
    const blocked = this.host.blocked?.();
    if (blocked) {
      this.setState("stopped", "restricted mode");
      this.host.post({ type: "error", message: blocked.message, action: blocked.action });
      throw new ShownError(blocked.message);
    }
    const command = await this.host.locateAgent();
    if (!command) {
      this.setState("error", "not installed");
      this.host.post({ type: "error", message: INSTALL_HELP, action: "install" });
      throw new ShownError(INSTALL_HELP);
    }
    this.setState("starting");
    this.host.log?.(`starting ${command.command} ${command.args.join(" ")} (${command.source})\n`);
    this.marks.spawned = performance.now();
    const connection = AgentConnection.start(
      command,
      {
        readTextFile: (request) => this.host.files.readTextFile(request),
        writeTextFile: (request) => this.changes.write(request.path, request.content, () => this.host.files.writeTextFile(request)),
        requestPermission: (request, signal) => this.permissions.ask(request, signal),
        sessionUpdate: (notification) => this.onUpdate(notification),
        terminals: this.terminals,
        defaultCwd: () => this.host.cwd(),
      },
      {
        cwd: this.host.cwd(),
        onStderr: (text) => this.host.log?.(text),
        onTraffic: this.host.traffic,
        onExit: (code, signal) => {
          this.host.log?.(`agent exited (code ${code}, signal ${signal})\n`);
          if (this.connection === connection) {
            this.permissions.cancelAll();
            const crashed = !this.stopping.has(connection) && this.marks.initialized !== undefined && connection.initialized;
            const sessionId = this.sessionId;
            this.setState("stopped", code === 0 ? undefined : `exited with ${signal ?? code}`);
            if (crashed) {
              this.connection = undefined; // its exit promise has not settled yet: it still looks alive
              void this.recover(sessionId, signal ?? code);
            } else {
              this.sessionId = undefined;
            }
          }
        },
      },
    );
    this.connection = connection;
    try {
      this.initializeResponse = await connection.initialize();
    } catch (error) {
      // A spawn failure (ENOENT, EACCES) closes the connection: name the cause, not the close.
      const cause = connection.startError ? `could not run ${command.command} (${command.source}): ${connection.startError.message}` : describe(error);
      this.setState("error", connection.startError ? "could not start" : "did not start");
      this.host.post({ type: "error", message: `The agent did not start: ${cause}. See the "Hermes" output for its log.`, action: "log" });
      await connection.stop();
      throw new ShownError(cause);
    }
    connection.initialized = true;
    this.marks.initialized = performance.now();
    this.setState("ready");
    return connection;
  }

  private onUpdate(notification: SessionNotification): void {
    if (notification.sessionId !== this.sessionId) {
      return;
    }
    const update = notification.update;
    if (update.sessionUpdate === "config_option_update") {
      this.configOptions = update.configOptions;
      this.postSession();
    } else if (update.sessionUpdate === "current_mode_update") {
      this.configOptions = this.configOptions.map((o) =>
        o.category === "mode" ? ({ ...o, currentValue: update.currentModeId } as SessionConfigOption) : o,
      );
      this.postSession();
    }
    if (update.sessionUpdate === "available_commands_update") {
      this.host.post({ type: "commands", commands: update.availableCommands });
    }
    this.host.post({ type: "update", update });
  }

  private postSession(title?: string): void {
    if (this.sessionId) {
      this.host.post({ type: "session", sessionId: this.sessionId, cwd: this.host.cwd(), title, configOptions: this.configOptions });
      this.host.stateChanged?.(this.state, this.mode);
    }
  }

  /** Reports an agent error to the view once; auth_required offers the set-up. */
  private report(error: unknown, doing: string): void {
    if (error instanceof ShownError) {
      return;
    }
    if (error instanceof acp.RequestError && error.code === AUTH_REQUIRED) {
      if (this.state !== "error" || !this.needsKey) {
        this.needsKey = true;
        this.setState("error", "no API key");
        this.host.post({
          type: "error",
          message: "Hermes has no API key yet. Set one up (it is kept in VS Code's secret storage), then try again.",
          action: "setup",
        });
      }
      return;
    }
    this.host.post({ type: "error", message: `${doing} failed: ${describe(error)}` });
  }

  /** The last error was auth_required (shown once until a start succeeds). */
  private needsKey = false;

  /**
   * After a crash: start the agent again and resume the session it had, so the next prompt
   * continues the conversation the model already saw.
   */
  private async recover(sessionId: string | undefined, how: string | number | null): Promise<void> {
    this.crashes += 1;
    if (this.crashes > MAX_CRASH_RESTARTS) {
      this.sessionId = undefined;
      this.host.post({ type: "error", message: `The agent stopped (${how}) ${MAX_CRASH_RESTARTS} times in a row; not restarting it. Use "Hermes: Restart agent" to try again.`, action: "restart" });
      return;
    }
    this.host.post({ type: "notice", message: `The agent stopped unexpectedly (${how}). Restarting it and continuing this session…` });
    try {
      await this.resume(sessionId);
      this.host.post({ type: "notice", message: "The agent restarted; the conversation continues." });
    } catch (error) {
      this.report(error, "Restarting the agent");
    }
  }

  /** Starts the agent (again) and continues `sessionId` with session/resume, else a new one. */
  private async resume(sessionId: string | undefined): Promise<void> {
    const connection = await this.ensureStarted();
    if (!sessionId) {
      await this.newSession();
      return;
    }
    this.sessionId = sessionId;
    try {
      const response = await connection.agent.request(acp.methods.agent.session.resume, { sessionId, cwd: this.host.cwd(), mcpServers: [] });
      this.configOptions = response.configOptions ?? this.configOptions;
      this.postSession();
    } catch (error) {
      this.sessionId = undefined;
      throw error;
    }
  }

  /** Stops the agent and starts it again (new settings, a new key), keeping the session. */
  async restart(): Promise<void> {
    const sessionId = this.sessionId;
    const old = this.connection;
    // Detached first, so its exit does not end the session we are about to continue.
    this.connection = undefined;
    if (old) {
      this.stopping.add(old);
      this.permissions.cancelAll();
      this.terminals.releaseAll();
      await old.stop();
    }
    this.needsKey = false;
    this.crashes = 0;
    try {
      await this.resume(sessionId);
      if (sessionId && this.sessionId === sessionId) {
        this.host.post({ type: "notice", message: "Restarted the agent; the conversation continues." });
      }
    } catch (error) {
      this.report(error, "Restarting the agent");
    }
  }

  /** The session being opened (the view's first, a new or a past one), until it is. */
  private settingUp: Promise<unknown> | undefined;

  /** A prompt sent while a session is being opened goes to that session, not a second one. */
  private async sessionSettled(): Promise<void> {
    while (!this.sessionId && this.settingUp) await this.settingUp.catch(() => undefined);
  }

  newSession(): Promise<string | undefined> {
    const creating = this.createSession();
    this.settingUp = creating;
    void creating.finally(() => {
      if (this.settingUp === creating) this.settingUp = undefined;
    });
    return creating;
  }

  private async createSession(): Promise<string | undefined> {
    try {
      const connection = await this.ensureStarted();
      const response = await connection.agent.request(acp.methods.agent.session.new, { cwd: this.host.cwd(), mcpServers: [] });
      this.sessionId = response.sessionId;
      this.configOptions = response.configOptions ?? [];
      await this.host.sessionChosen?.(response.sessionId);
      this.host.post({ type: "clear", cwd: this.host.cwd() });
      this.changes.publish();
      this.postSession();
      return this.sessionId;
    } catch (error) {
      this.report(error, "Starting a session");
      return undefined;
    }
  }

  async listSessions(): Promise<SessionInfo[]> {
    const connection = await this.ensureStarted();
    const response = await connection.agent.request(acp.methods.agent.session.list, { cwd: this.host.cwd() });
    this.host.post({ type: "sessions", sessions: response.sessions });
    return response.sessions;
  }

  /** Opens a past session: the view is cleared and the agent replays it into the view. */
  loadSession(sessionId: string): Promise<boolean> {
    const loading = this.openSession(sessionId);
    this.settingUp = loading;
    void loading.finally(() => {
      if (this.settingUp === loading) this.settingUp = undefined;
    });
    return loading;
  }

  private async openSession(sessionId: string): Promise<boolean> {
    try {
      const connection = await this.ensureStarted();
      this.host.post({ type: "clear", cwd: this.host.cwd() });
      this.changes.publish();
      this.sessionId = sessionId; // the replayed updates arrive before the response
      const response = await connection.agent.request(acp.methods.agent.session.load, {
        sessionId,
        cwd: this.host.cwd(),
        mcpServers: [],
      });
      this.configOptions = response.configOptions ?? [];
      await this.host.sessionChosen?.(sessionId);
      this.postSession();
      return true;
    } catch (error) {
      this.sessionId = undefined;
      this.report(error, "Opening the session");
      return false;
    }
  }

  /**
   * Sends a prompt. One sent while a turn runs is queued by the agent (and `/steer`,
   * `/queue` act on the running turn). A prompt that could not be sent goes back to the view's
   * input, so nothing typed is lost.
   */
  async prompt(blocks: ContentBlock[], shownText: string, typed = shownText): Promise<StopReason | undefined> {
    let connection: AgentConnection;
    try {
      await this.sessionSettled();
      if (!this.sessionId && !(await this.newSession())) {
        this.host.post({ type: "promptRejected", text: typed });
        return undefined;
      }
      connection = await this.ensureStarted();
    } catch (error) {
      this.report(error, "Sending the prompt");
      this.host.post({ type: "promptRejected", text: typed });
      return undefined;
    }
    this.host.post({ type: "userMessage", text: shownText });
    this.turns += 1;
    this.setState("busy");
    try {
      const response = await connection.agent.request(acp.methods.agent.session.prompt, {
        sessionId: this.sessionId!,
        prompt: blocks,
      });
      this.crashes = 0;
      this.host.post({ type: "turnEnded", stopReason: response.stopReason });
      return response.stopReason;
    } catch (error) {
      if (connection.alive) {
        this.report(error, "The turn");
      } // else the crash recovery says what happened
      return undefined;
    } finally {
      this.turns -= 1;
      if (this.state === "busy" && this.turns === 0) {
        this.setState("ready");
      }
    }
  }

  /** Undo of one file (or all) the agent changed; the user's own later edits are asked about. */
  async undoChange(path?: string): Promise<void> {
    const confirm = (file: string): Promise<boolean> =>
      this.host.confirm?.(`${relative(this.host.cwd(), file)} changed after Hermes edited it. Undo Hermes's change anyway? Your later edits to it are lost.`, "Undo anyway") ??
      Promise.resolve(false);
    try {
      if (path === undefined) await this.changes.undoAll(confirm);
      else await this.changes.undo(path, confirm);
    } catch (error) {
      this.host.post({ type: "error", message: `Undo failed: ${describe(error)}` });
    }
  }

  /**
   * Before `resend.text` is sent in place of a past message: with the agent's rewind, the
   * conversation (and, if asked, the files) go back to just before that message and the view
   * drops the turns cut off. Without it the text is simply sent as a new prompt. False: do
   * not send (the user was told why).
   */
  async rewindFor(resend: Resend): Promise<boolean> {
    const connection = this.connection;
    if (!connection?.alive || !this.sessionId) {
      return true; // the prompt starts the agent and a session
    }
    if (!rewindCapability(this.initializeResponse)) {
      this.host.post({ type: "notice", message: "This agent cannot go back in a conversation: the message is sent as a new one, after the turns so far." });
      return true;
    }
    if (this.turns > 0) {
      this.host.post({ type: "error", message: "A turn is running: stop it (Esc) before editing or retrying a message." });
      return false;
    }
    try {
      const outcome = await rewindBefore(connection.agent, this.sessionId, resend, this.initializeResponse!);
      if (!outcome) {
        this.host.post({ type: "error", message: "That message is not in the agent's history (a command, or a turn cut off before), so it cannot be edited; send it as a new message." });
        return false;
      }
      this.host.post({ type: "rewound", ordinal: resend.ordinal });
      if (resend.restoreFiles) {
        await this.changes.forgetRestored();
        if (outcome.summary) this.host.post({ type: "notice", message: outcome.summary });
      }
      return true;
    } catch (error) {
      this.report(error, "Going back to that message");
      return false;
    }
  }

  async cancel(): Promise<void> {
    this.permissions.cancelAll();
    if (this.connection?.alive && this.sessionId) {
      await this.connection.agent.notify(acp.methods.agent.session.cancel, { sessionId: this.sessionId });
    }
  }

  async setConfig(configId: string, value: string): Promise<void> {
    if (!this.connection || !this.sessionId) {
      return;
    }
    try {
      const response = await this.connection.agent.request(acp.methods.agent.session.setConfigOption, {
        sessionId: this.sessionId,
        configId,
        value,
      });
      this.configOptions = response.configOptions;
      this.postSession();
    } catch (error) {
      this.report(error, "Changing the setting");
    }
  }

  async dispose(): Promise<void> {
    this.permissions.cancelAll();
    this.terminals.releaseAll();
    if (this.connection) {
      this.stopping.add(this.connection);
      await this.connection.stop();
    }
  }
}

export function isEdit(kind: string | null | undefined): boolean {
  return kind === "edit" || kind === "delete" || kind === "move";
}

export function describe(error: unknown): string {
  if (error instanceof acp.RequestError) {
    return `${error.message} (${error.code})`;
  }
  return error instanceof Error ? error.message : String(error);
}
