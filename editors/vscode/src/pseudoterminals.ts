import * as vscode from "vscode";
import type { TerminalExitStatus } from "@agentclientprotocol/sdk";
import type { TerminalSink } from "./terminals";
import { drawableCommand, drawableOutput } from "./terminalText";

/**
 * Shows the agent's commands in one reused VS Code terminal named "Hermes" (a Pseudoterminal
 * fed by their output), revealed without taking focus when a command starts. What arrives
 * before VS Code opens the terminal is kept and written on open, so no first line is lost.
 */
export class PseudoterminalSink implements TerminalSink, vscode.Disposable {
  private terminal: vscode.Terminal | undefined;
  private write: vscode.EventEmitter<string> | undefined;
  private isOpen = false;
  private early: string[] = [];
  private readonly closing: vscode.Disposable;

  constructor() {
    this.closing = vscode.window.onDidCloseTerminal((closed) => {
      if (closed === this.terminal) {
        this.write?.dispose();
        this.terminal = undefined;
        this.write = undefined;
      }
    });
  }

  private emit(text: string): void {
    if (!this.terminal) {
      const write = new vscode.EventEmitter<string>();
      this.write = write;
      this.isOpen = false;
      this.early = [];
      const pty: vscode.Pseudoterminal = {
        onDidWrite: write.event,
        open: () => {
          this.isOpen = true;
          for (const queued of this.early.splice(0)) write.fire(queued);
        },
        close: () => undefined,
      };
      this.terminal = vscode.window.createTerminal({ name: "Hermes", pty, isTransient: true, iconPath: new vscode.ThemeIcon("hubot") });
    }
    if (this.isOpen) this.write?.fire(text);
    else this.early.push(text);
  }

  opened(_id: string, commandLine: string): void {
    this.emit(`\x1b[2m$ ${drawableCommand(commandLine).replace(/\n/g, "\r\n  ")}\x1b[0m\r\n`);
    this.terminal?.show(true);
  }

  output(_id: string, text: string): void {
    this.emit(drawableOutput(text).replace(/\r?\n/g, "\r\n"));
  }

  exited(_id: string, status: TerminalExitStatus): void {
    const how = status.signal ? `killed (${status.signal})` : `exit ${status.exitCode}`;
    this.emit(`\r\n\x1b[2m[${how}]\x1b[0m\r\n\r\n`);
  }

  released(_id: string): void {
    // The shared terminal stays: the next command reuses it.
  }

  dispose(): void {
    this.closing.dispose();
    this.write?.dispose();
  }
}
