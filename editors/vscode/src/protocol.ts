/** Messages between the extension host and the chat webview (both sides import these types). */
import type {
  AvailableCommand,
  RequestPermissionRequest,
  SessionConfigOption,
  SessionInfo,
  SessionUpdate,
  StopReason,
} from "@agentclientprotocol/sdk";

/** The button an error offers. */
export type ErrorAction = "setup" | "install" | "trust" | "log" | "restart" | "retry";

export type AgentState = "stopped" | "starting" | "ready" | "busy" | "error";

/** A context chip above the input (see contextChips.ts). */
export interface Attachment {
  id: string;
  kind: "file" | "selection" | "image";
  label: string;
  uri: string;
  /** The active editor's file or selection, offered with each prompt until removed. */
  current: boolean;
  /** An image's thumbnail, a data: URL. */
  thumbnail?: string;
}

/** A file the agent changed that the user has not kept or undone yet. */
export interface ChangedFile {
  path: string;
  added: number;
  removed: number;
  /** The agent created it: Undo deletes it. */
  created: boolean;
}

/** Send `text` again in place of a past user message: the `ordinal`-th (0-based) in the view. */
export interface Resend {
  type: "resend";
  ordinal: number;
  /** What that message said, and how many later messages in the view said the same: to find
   * it in the agent's history, counted from the newest. */
  original: string;
  later: number;
  text: string;
  /** Also put back the files the agent changed since that message. */
  restoreFiles: boolean;
}

/** The buttons beside a code block's Copy. */
export type CodeAction = "insert" | "apply" | "newFile";

export type ToView =
  | { type: "state"; state: AgentState; detail?: string }
  | { type: "session"; sessionId: string; cwd: string; title?: string; configOptions: SessionConfigOption[] }
  | { type: "clear"; cwd: string } // the thread that follows is in `cwd` (its paths are shown relative to it)
  | { type: "update"; update: SessionUpdate }
  | { type: "userMessage"; text: string }
  | { type: "turnEnded"; stopReason: StopReason }
  | { type: "permission"; id: string; request: RequestPermissionRequest; reviewable: boolean }
  | { type: "permissionSettled"; id: string; optionId: string | null }
  | { type: "terminalOutput"; terminalId: string; text: string }
  | { type: "terminalExit"; terminalId: string; exitCode: number | null; signal: string | null }
  | { type: "commands"; commands: AvailableCommand[] }
  | { type: "sessions"; sessions: SessionInfo[] }
  | { type: "files"; query: string; files: string[] }
  | { type: "attachments"; attachments: Attachment[] }
  | { type: "error"; message: string; action?: ErrorAction }
  | { type: "notice"; message: string }
  | { type: "promptRejected"; text: string } // it was not sent: back into the input
  | { type: "changes"; files: ChangedFile[] }
  | { type: "rewound"; ordinal: number }; // the thread from that user message on is gone

export type FromView =
  | { type: "ready" }
  | { type: "prompt"; text: string; mentions: string[] }
  | { type: "cancel" }
  | { type: "permission"; id: string; optionId: string }
  | { type: "review"; id: string }
  | { type: "setConfig"; configId: string; value: string }
  | { type: "open"; path: string; line?: number | null }
  | { type: "newSession" }
  | { type: "listSessions" }
  | { type: "loadSession"; sessionId: string }
  | { type: "renameSession"; sessionId: string }
  | { type: "deleteSession"; sessionId: string }
  | { type: "findFiles"; query: string }
  | { type: "removeAttachment"; id: string }
  | { type: "dropFiles"; uris: string[] }
  | { type: "pasteImage"; mimeType: string; data: string; name: string }
  | { type: "codeAction"; action: CodeAction; code: string; language: string; path: string | null }
  | { type: "copy"; text: string }
  | { type: "setup" }
  | { type: "action"; action: ErrorAction }
  | { type: "retry" }
  | { type: "keepFile"; path: string }
  | { type: "undoFile"; path: string }
  | { type: "keepAll" }
  | { type: "undoAll" }
  | Resend;
