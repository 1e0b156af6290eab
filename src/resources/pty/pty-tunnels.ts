import crypto from 'node:crypto';
import { ERRORS } from '../../platform/errors.js';
import type { DevboxService } from '../devboxes/devbox-service.js';

/** A PTY tunnel: the box its host name reaches and the token every request must carry. */
export interface PtyTunnel {
  key: string;
  devboxId: string;
  authToken: string;
  createdAtMs: number;
}

/** Tunnels one box holds at once; a further one replaces the oldest. */
const PER_BOX = 64;

/**
 * PTY tunnels: fresh on every create_pty_tunnel, never on the devbox view, always authenticated. They live
 * in this server's memory, where the terminal sessions they reach live too (a shell is a process this server
 * relays): they last while the server runs and the box has not ended (suspend and resume keep them; the
 * sessions behind them start fresh), and a restart ends them with the sessions.
 */
export class PtyTunnels {
  private readonly byKeys = new Map<string, PtyTunnel>();
  private readonly byBox = new Map<string, string[]>();

  constructor(private readonly devboxes: () => DevboxService) {}

  /** A new tunnel for a running box (400 otherwise, like enable_tunnel). */
  async create(accountId: string, devboxId: string): Promise<PtyTunnel> {
    const d = await this.devboxes().get(accountId, devboxId);
    if (d.status !== 'running') throw ERRORS.devboxNotRunning(d.id, d.status);
    const t: PtyTunnel = {
      key: crypto.randomBytes(16).toString('hex'),
      devboxId: d.id,
      authToken: crypto.randomBytes(24).toString('base64url'),
      createdAtMs: Date.now(),
    };
    const keys = this.byBox.get(d.id) ?? [];
    keys.push(t.key);
    while (keys.length > PER_BOX) this.byKeys.delete(keys.shift()!);
    this.byBox.set(d.id, keys);
    this.byKeys.set(t.key, t);
    return t;
  }

  byKey(key: string): PtyTunnel | undefined {
    return this.byKeys.get(key);
  }

  /** The box ended: its tunnels go. */
  dropBox(devboxId: string): void {
    for (const key of this.byBox.get(devboxId) ?? []) this.byKeys.delete(key);
    this.byBox.delete(devboxId);
  }
}
