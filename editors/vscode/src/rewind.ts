/**
 * The agent's rewind (`_hermes/rewind`, advertised in `initialize` under
 * `agentCapabilities._meta.hermes.rewind`): the conversation, and the files if asked, go back
 * to just before one of the session's prompts.
 */
import type { ClientContext, InitializeResponse } from "@agentclientprotocol/sdk";
import type { Resend } from "./protocol";
import { promptPreview } from "./textEdits";

interface ListedPrompt {
  number: number;
  text: string;
}

interface RewindOutcome {
  restored?: string[];
  deleted?: string[];
  kept?: string[];
  lost?: string[];
  failed?: string[];
}

/** The method the agent named for rewinding, or undefined when it has none. */
export function rewindCapability(init: InitializeResponse | undefined): string | undefined {
  const meta = init?.agentCapabilities?._meta as { hermes?: { rewind?: { method?: unknown } } } | null | undefined;
  const method = meta?.hermes?.rewind?.method;
  return typeof method === "string" && method.startsWith("_") ? method : undefined;
}

/**
 * The number of the prompt the view's message stands for: the agent lists each prompt's
 * first 70 characters, on one line; a prompt that carried files lists them after the typed
 * words. Among equal ones, `later` counts from the newest.
 */
export function findPrompt(prompts: ListedPrompt[], original: string, later: number): number | undefined {
  const typed = promptPreview(original);
  const stem = typed.endsWith("…") ? typed.slice(0, -1) : typed;
  // The files a prompt carried follow its words as `<file uri=…>` (or `<resource …>`).
  const matches = prompts.filter((prompt) => [typed, `${stem}…`, `${stem} …`].includes(prompt.text) || prompt.text.startsWith(`${stem} <`));
  return matches[matches.length - 1 - later]?.number;
}

/** Rewinds to just before the message `resend` replaces; undefined when it is not found. */
export async function rewindBefore(
  agent: ClientContext,
  sessionId: string,
  resend: Resend,
  init: InitializeResponse,
): Promise<{ summary: string | undefined } | undefined> {
  const method = rewindCapability(init)!;
  const listed = await agent.request<{ prompts: ListedPrompt[] }>(method, { sessionId });
  const number = findPrompt(listed.prompts, resend.original, resend.later);
  if (number === undefined) return undefined;
  const outcome = await agent.request<RewindOutcome>(method, { sessionId, prompt: number, restore: resend.restoreFiles ? "both" : "chat" });
  return { summary: resend.restoreFiles ? summarize(outcome) : undefined };
}

function summarize(outcome: RewindOutcome): string | undefined {
  const parts: string[] = [];
  const say = (label: string, files: string[] | undefined): void => {
    if (files?.length) parts.push(`${label} ${files.join(", ")}`);
  };
  say("restored", outcome.restored);
  say("removed", outcome.deleted);
  say("kept (changed by hand since; not overwritten)", outcome.kept);
  say("too large to have been kept", outcome.lost);
  say("could not be restored", outcome.failed);
  return parts.length ? `Files put back as they were before that message: ${parts.join("; ")}.` : undefined;
}
