import type { RequestPermissionRequest, RequestPermissionResponse } from "@agentclientprotocol/sdk";

export interface PendingPermission {
  id: string;
  request: RequestPermissionRequest;
}

/**
 * Permission requests waiting for the user. The view shows each with the agent's own
 * options; the answer (or the agent cancelling the request) settles it exactly once.
 */
export class PermissionBroker {
  private next = 1;
  private readonly waiting = new Map<string, { pending: PendingPermission; settle: (r: RequestPermissionResponse) => void }>();

  constructor(
    private readonly show: (pending: PendingPermission) => void,
    private readonly settled: (id: string, optionId: string | null) => void,
  ) {}

  ask(request: RequestPermissionRequest, signal: AbortSignal): Promise<RequestPermissionResponse> {
    const id = `perm-${this.next++}`;
    const pending = { id, request };
    return new Promise((resolve) => {
      this.waiting.set(id, { pending, settle: resolve });
      signal.addEventListener("abort", () => this.cancel(id), { once: true });
      this.show(pending);
    });
  }

  get(id: string): PendingPermission | undefined {
    return this.waiting.get(id)?.pending;
  }

  get pendingIds(): string[] {
    return [...this.waiting.keys()];
  }

  /** The user picked an option. An id the agent did not offer is refused. */
  answer(id: string, optionId: string): boolean {
    const entry = this.waiting.get(id);
    if (!entry || !entry.pending.request.options.some((option) => option.optionId === optionId)) {
      return false;
    }
    this.waiting.delete(id);
    entry.settle({ outcome: { outcome: "selected", optionId } });
    this.settled(id, optionId);
    return true;
  }

  cancel(id: string): void {
    const entry = this.waiting.get(id);
    if (!entry) {
      return;
    }
    this.waiting.delete(id);
    entry.settle({ outcome: { outcome: "cancelled" } });
    this.settled(id, null);
  }

  /** Every open request answers "cancelled" (ACP: the client does this on session/cancel). */
  cancelAll(): void {
    for (const id of this.pendingIds) {
      this.cancel(id);
    }
  }
}
