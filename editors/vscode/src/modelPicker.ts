import * as vscode from "vscode";
import type { SessionConfigOption } from "@agentclientprotocol/sdk";

/**
 * The session's model option as a quick pick (the agent's own list, from its config options);
 * resolves to the option's id and the value chosen, or undefined.
 */
export async function pickModel(options: SessionConfigOption[]): Promise<{ configId: string; value: string } | undefined> {
  const option = options.find((entry) => entry.category === "model" && entry.type === "select");
  if (!option || option.type !== "select") {
    void vscode.window.showInformationMessage("Hermes: the agent offers no model choice for this session.");
    return undefined;
  }
  const choices = option.options.flatMap((entry) => ("options" in entry ? entry.options : [entry]));
  const picked = await vscode.window.showQuickPick(
    choices.map((choice) => ({
      label: choice.name,
      description: choice.value === option.currentValue ? "current" : choice.value !== choice.name ? choice.value : undefined,
      detail: choice.description ?? undefined,
      value: choice.value,
    })),
    { title: "Hermes: which model?", placeHolder: "The models the agent's provider offers" },
  );
  return picked ? { configId: option.id, value: picked.value } : undefined;
}
