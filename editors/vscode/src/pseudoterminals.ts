import * as vscode from "vscode";
import type { TerminalExitStatus } from "@agentclientprotocol/sdk";
import type { TerminalSink } from "./terminals";

/** Shows each agent command in a VS Code terminal (a Pseudoterminal fed by its output). */
export class PseudoterminalSink implements TerminalSink {
  private readonly shown = new Map<string, { write: vscode.EventEmitter<string>; terminal: vscode.Terminal }>();

  opened(id: string, commandLine: string): void {
    const write = new vscode.EventEmitter<string>();
    const pty: vscode.Pseudoterminal = {
      onDidWrite: write.event,
      open: () => write.fire(`\x1b[2m$ ${commandLine}\x1b[0m\r\n`),
      close: () => undefined,
    };
    const terminal = vscode.window.createTerminal({ name: `Hermes: ${commandLine.slice(0, 40)}`, pty, isTransient: true });
    this.shown.set(id, { write, terminal });
  }

  output(id: string, text: string): void {
    this.shown.get(id)?.write.fire(text.replace(/\r?\n/g, "\r\n"));
  }

  exited(id: string, status: TerminalExitStatus): void {
    const how = status.signal ? `killed (${status.signal})` : `exit ${status.exitCode}`;
    this.shown.get(id)?.write.fire(`\r\n\x1b[2m[${how}]\x1b[0m\r\n`);
  }

  released(id: string): void {
    const entry = this.shown.get(id);
    entry?.write.dispose();
    this.shown.delete(id);
  }
}
