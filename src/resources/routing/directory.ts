import type { Store } from '../../platform/store/types.js';
import { leaseState, type NodeRecord, SqlNodeStore } from '../nodes/index.js';

/** Where a node's requests go: its API server's URL, or why none can reach it now. */
export type Reach = { url: string } | { why: string };

/** How long the registry's rows are reused: a renewal moves a lease by a third of it, 5 s by default. */
const FRESH_MS = 1000;

const iso = (ms: number | null) => (ms === null ? 'an unknown time' : new Date(ms).toISOString());

/**
 * The registry as the routing front reads it: every node's row, read at most once a second (one statement
 * for all), so a forwarded request costs no read of its own for its target.
 */
export class NodeDirectory {
  private readonly nodes: SqlNodeStore;
  private rows = new Map<string, NodeRecord>();
  private readAtMs = Number.NEGATIVE_INFINITY;
  private reading: Promise<void> | undefined;

  constructor(store: Store) {
    this.nodes = new SqlNodeStore(store.db);
  }

  /** The API server of `name`, when it has one and its lease holds. */
  async reach(name: string, nowMs = Date.now()): Promise<Reach> {
    if (nowMs - this.readAtMs > FRESH_MS) await this.read();
    const n = this.rows.get(name);
    if (!n) return { why: `node ${name} is not in the registry (devboxd nodes lists the nodes)` };
    if (n.state === 'lost') return { why: `node ${name} was declared lost (no heartbeat since ${iso(n.heartbeatMs)})` };
    const lease = leaseState(n, nowMs);
    if (lease === 'stopped') return { why: `node ${name} is stopped (its server stopped at ${iso(n.stoppedAtMs)}; its devboxes answer once it starts)` };
    if (lease === 'lapsed') return { why: `node ${name} is not answering (no heartbeat since ${iso(n.heartbeatMs)})` };
    if (!n.apiUrl) return { why: `node ${name} has no API address other servers reach it at (DEVBOXD_API_URL on its server)` };
    return { url: n.apiUrl };
  }

  /** The next `reach` reads the registry again (a forward to a node failed: its row may have changed). */
  forget(): void {
    this.readAtMs = Number.NEGATIVE_INFINITY;
  }

  private read(): Promise<void> {
    this.reading ??= this.nodes
      .list()
      .then((rows) => {
        this.rows = new Map(rows.map((n) => [n.name, n]));
        this.readAtMs = Date.now();
      })
      .finally(() => (this.reading = undefined));
    return this.reading;
  }
}
