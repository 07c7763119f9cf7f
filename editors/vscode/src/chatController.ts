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
import type { AgentState, ToView } from "./protocol";
import { Terminals, type TerminalSink } from "./terminals";
import type { TrafficListener } from "./traffic";

/** ACP's "authentication required" error code. */
export const AUTH_REQUIRED = -32000;

/** What the controller needs from its host (VS Code, or a test). */
export interface ControllerHost {
  locateAgent(): AgentCommand | undefined;
  cwd(): string;
  post(message: ToView): void;
  files: Pick<ClientSide, "readTextFile" | "writeTextFile">;
  terminalSink?: TerminalSink;
  log?(text: string): void;
  traffic?: TrafficListener;
  stateChanged?(state: AgentState, mode: string | undefined): void;
  /** The view is about to show this session; it is told only once this settles, so a window
   * reload right after the view shows a session comes back to that session. */
  sessionChosen?(sessionId: string): PromiseLike<void>;
}

export class ChatController {
  state: AgentState = "stopped";
  connection: AgentConnection | undefined;
  initializeResponse: InitializeResponse | undefined;
  sessionId: string | undefined;
  configOptions: SessionConfigOption[] = [];
  readonly permissions: PermissionBroker;
  readonly terminals: Terminals;
  /** performance.now() marks for the benchmarks. */
  readonly marks: { spawned?: number; initialized?: number } = {};
  private starting: Promise<AgentConnection> | undefined;

  constructor(private readonly host: ControllerHost) {
    this.permissions = new PermissionBroker(
      (pending) => host.post({ type: "permission", id: pending.id, request: pending.request, reviewable: isEdit(pending.request.toolCall.kind) }),
      (id, optionId) => host.post({ type: "permissionSettled", id, optionId }),
    );
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
    const command = this.host.locateAgent();
    if (!command) {
      this.setState("error", "not installed");
      this.host.post({ type: "error", message: INSTALL_HELP, action: "install" });
      throw new Error(INSTALL_HELP);
    }
    this.setState("starting");
    this.host.log?.(`starting ${command.command} ${command.args.join(" ")} (${command.source})\n`);
    this.marks.spawned = performance.now();
    const connection = AgentConnection.start(
      command,
      {
        ...this.host.files,
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
            this.sessionId = undefined;
            this.setState("stopped", code === 0 ? undefined : `exited with ${signal ?? code}`);
          }
        },
      },
    );
    this.connection = connection;
    try {
      this.initializeResponse = await connection.initialize();
    } catch (error) {
      this.setState("error", describe(error));
      this.host.post({ type: "error", message: `The agent did not start: ${describe(error)}. See the "Hermes" output for its log.` });
      await connection.stop();
      throw error;
    }
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

  /** Reports an agent error to the view; auth_required offers the set-up. */
  private report(error: unknown, doing: string): void {
    if (error instanceof acp.RequestError && error.code === AUTH_REQUIRED) {
      this.host.post({
        type: "error",
        message: "Hermes has no model configured yet. Set it up (provider, key, model), then try again.",
        action: "setup",
      });
      return;
    }
    this.host.post({ type: "error", message: `${doing} failed: ${describe(error)}` });
  }

  async newSession(): Promise<string | undefined> {
    try {
      const connection = await this.ensureStarted();
      const response = await connection.agent.request(acp.methods.agent.session.new, { cwd: this.host.cwd(), mcpServers: [] });
      this.sessionId = response.sessionId;
      this.configOptions = response.configOptions ?? [];
      await this.host.sessionChosen?.(response.sessionId);
      this.host.post({ type: "clear", cwd: this.host.cwd() });
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
  async loadSession(sessionId: string): Promise<boolean> {
    try {
      const connection = await this.ensureStarted();
      this.host.post({ type: "clear", cwd: this.host.cwd() });
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

  async prompt(blocks: ContentBlock[], shownText: string): Promise<StopReason | undefined> {
    if (!this.sessionId && !(await this.newSession())) {
      return undefined;
    }
    const connection = await this.ensureStarted();
    this.host.post({ type: "userMessage", text: shownText });
    this.setState("busy");
    try {
      const response = await connection.agent.request(acp.methods.agent.session.prompt, {
        sessionId: this.sessionId!,
        prompt: blocks,
      });
      this.host.post({ type: "turnEnded", stopReason: response.stopReason });
      return response.stopReason;
    } catch (error) {
      this.report(error, "The turn");
      return undefined;
    } finally {
      if (this.state === "busy") {
        this.setState("ready");
      }
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
    await this.connection?.stop();
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
