import { ERRORS } from '../../platform/errors.js';
import { newId } from '../../lib/ids.js';
import type { Logger } from '../../lib/logger.js';
import type { Sandbox, SandboxStats } from '../../runtime/driver.js';
import type { ApiKey, Page, PageQuery, Store } from '../../platform/store/types.js';
import type { DevboxListFilter, DevboxStore } from './devbox-store.js';
import { checkEnvironment, defaultHostname, resolveSandboxSettings, type CreateDevboxInput } from './create-input.js';
import type { CreateResolution, DevboxExtensions } from './extensions.js';
import { type Lifecycle, ON_NODE } from './lifecycle.js';
import type { HostCapacity } from './resources.js';
import type { StatusEvents } from './status-events.js';
import { isPooled, TERMINAL, type Devbox, type DevboxStatus } from './types.js';

type Persist = NonNullable<CreateResolution['persist']>;

/** The devbox API in domain terms; routes call one method each. */
export class DevboxService {
  private readonly store: DevboxStore;

  constructor(
    /** The devbox table, and transactions in which features record what they keep about a new box. */
    private readonly db: Store,
    private readonly lifecycle: Lifecycle,
    private readonly events: StatusEvents,
    private readonly log: Logger,
    private readonly host: HostCapacity,
    /** DEVBOXD_NODE_NAME: recorded on every box this server creates (its sandbox runs here). */
    private readonly node: string,
    /** Create resolvers, environment providers, view enrichers and shutdown guards other features contribute. */
    private readonly ext: DevboxExtensions,
  ) {
    this.store = db.devboxes;
  }

  /**
   * A new box. With `place` (a tenant's create on the API), the placers may send it to another node (the
   * request is then forwarded there); without, it is created on this node (or refused, when it takes none).
   */
  async create(accountId: string, input: CreateDevboxInput, opts: { place?: boolean } = {}): Promise<Devbox> {
    const id = newId('dbx');
    const name = input.name || null;
    let layers: string[] = [];
    let blueprintId: string | null = null;
    let defaults: NonNullable<CreateResolution['defaults']> = {};
    const persists: Persist[] = [];
    // Resolvers after one that gives defaults (a blueprint's) see the request with them applied.
    let effective = input;
    const viewParts: string[] = [];
    for (const resolve of this.ext.resolvers) {
      const r = await resolve(accountId, effective);
      if (r?.layers) layers = r.layers;
      if (r?.blueprintId !== undefined) blueprintId = r.blueprintId;
      if (r?.defaults) {
        defaults = r.defaults;
        effective = { ...input, launchParameters: { ...defaults.launchParameters, ...(input.launchParameters ?? {}) } };
      }
      if (r?.persist) persists.push(r.persist);
      if (r?.viewPart) viewParts.push(r.viewPart);
    }
    const launchParameters = effective.launchParameters ?? {};
    const sandbox = resolveSandboxSettings(id, name, launchParameters, this.host);
    if (defaults.cwd) sandbox.cwd = defaults.cwd;
    const env = { ...defaults.environment, ...(input.environmentVariables ?? {}) };
    checkEnvironment(env, 'environment_variables');
    for (const place of this.ext.placers) await place({ size: sandbox.limits, layers }, opts.place === true);
    const now = Date.now();
    const cold: Devbox = {
      id,
      accountId,
      name,
      status: 'provisioning',
      createTimeMs: now,
      endTimeMs: null,
      failureReason: null,
      shutdownReason: null,
      metadata: input.metadata ?? {},
      launchParameters,
      environment: env,
      entrypoint: input.entrypoint || defaults.entrypoint || null,
      blueprintId,
      snapshotId: input.snapshotId || null,
      layers,
      sandbox,
      stateTransitions: [{ status: 'provisioning', transitionTimeMs: now }],
      keepAliveAtMs: now,
      node: this.node,
      viewParts,
    };
    const d = (await this.fromPool(cold, persists)) ?? cold;
    if (d === cold) await this.record(d, persists, async (tx) => (await tx.devboxes.insert(d), true));
    void this.lifecycle
      .boot(d, {
        fileMounts: input.fileMounts ?? {},
        objectMounts: input.objectMounts ?? [],
        agentMounts: input.agentMounts ?? [],
        codeMounts: input.codeMounts ?? [],
        taken: d !== cold,
      })
      .catch((err) => this.log.error({ err, devbox: d.id }, 'boot failed'));
    return d;
  }

  /**
   * A ready box of the same make from a warm pool, for a create that does not name a hostname of its own (a
   * pooled box's is its id's): the new box takes the pooled box's id, and its record is written over the
   * pooled one's with what the resolvers keep. Null: none ready, or it ended meanwhile (the cold path).
   */
  private async fromPool(cold: Devbox, persists: Persist[]): Promise<Devbox | null> {
    const pool = this.ext.pool;
    if (!pool || isPooled(cold) || cold.sandbox.hostname !== defaultHostname(cold.id)) return null;
    const id = pool.take({ layers: cold.layers, limits: cold.sandbox.limits, user: cold.sandbox.user });
    if (!id) return null;
    const d: Devbox = { ...cold, id, sandbox: { ...cold.sandbox, hostname: defaultHostname(id) } };
    try {
      if (await this.record(d, persists, (tx) => tx.devboxes.claimPooled(d))) return d;
    } catch (err) {
      pool.returned(id);
      throw err;
    }
    pool.returned(id);
    return null;
  }

  /** Writes the new box's record (`write`: false if it could not) and what resolvers keep, in one transaction. */
  private async record(d: Devbox, persists: Persist[], write: (tx: Store) => Promise<boolean>): Promise<boolean> {
    if (!persists.length) return write(this.db);
    return this.db.transaction(async (tx) => {
      if (!(await write(tx))) return false;
      for (const persist of persists) await persist(tx, d);
      return true;
    });
  }

  /** Boxes of every account by status, for the operator's /metrics. */
  countByStatus(): Promise<Partial<Record<DevboxStatus, number>>> {
    return this.store.countByStatus();
  }

  async get(accountId: string, id: string): Promise<Devbox> {
    const d = await this.store.get(accountId, id);
    if (!d) throw ERRORS.notFound('devbox', id);
    return d;
  }

  /**
   * The node that serves requests for the box, when it is another node: a box that has not ended is its
   * node's (its sandbox, disk and streams are there); an ended one is only its record, which any server reads.
   */
  elsewhere(d: Devbox): string | undefined {
    return d.node && d.node !== this.node && !TERMINAL.has(d.status) ? d.node : undefined;
  }

  /** The box as `get` finds it for the account of the key with `keyHash`, and that key, read together. */
  getWithKey(keyHash: string, id: string): Promise<{ key?: ApiKey; devbox?: Devbox }> {
    return this.store.getWithKey(keyHash, id);
  }

  list(accountId: string, page: PageQuery, filter?: DevboxListFilter): Promise<Page<Devbox>> {
    return this.store.list(accountId, page, filter);
  }

  /** Patch: undefined/null leave a field; "" clears the name; {} clears the metadata. */
  async update(accountId: string, id: string, patch: { name?: string | null; metadata?: Record<string, string> | null }): Promise<Devbox> {
    const changes: { name?: string | null; metadata?: Record<string, string> } = {};
    if (patch.name !== undefined && patch.name !== null) changes.name = patch.name === '' ? null : patch.name;
    if (patch.metadata !== undefined && patch.metadata !== null) changes.metadata = patch.metadata;
    const d = await this.store.patch(accountId, id, changes);
    if (!d) throw ERRORS.notFound('devbox', id);
    return d;
  }

  async shutdown(accountId: string, id: string, force: boolean): Promise<Devbox> {
    const d = await this.get(accountId, id);
    if (TERMINAL.has(d.status)) return d;
    if (!force) {
      for (const guard of this.ext.shutdownGuards) {
        const refusal = await guard(d);
        if (refusal) throw typeof refusal === 'string' ? ERRORS.conflict(refusal) : refusal;
      }
    }
    return (await this.lifecycle.end(id, { status: 'shutdown', reason: 'api_shutdown' })) ?? d;
  }

  /**
   * Fails, in the caller's transaction `tx`, every box of `node` that has a sandbox there (a suspended box
   * keeps its disk as a layer and stays suspended): the node stopped answering, `why` says so. Each change is
   * conditional on the status it leaves. Answers the boxes it failed; once `tx` committed, `lostEnded` tells
   * their waiters and stop listeners.
   */
  async failLost(tx: Store, node: string, why: string): Promise<Devbox[]> {
    const failed: Devbox[] = [];
    for (const d of await tx.devboxes.listByStatus(ON_NODE, node)) {
      // Rows from before node names ('') are whichever server opens the database's, not the lost node's.
      if (d.node !== node) continue;
      const ended = await this.lifecycle.transition(d.id, ON_NODE, 'failure', { why, failureReason: 'health_check_failed', tx: tx.devboxes });
      if (ended) failed.push(ended);
    }
    return failed;
  }

  /** After `failLost`'s transaction committed: each box ends here as any end does (its sandbox was elsewhere). */
  lostEnded(boxes: readonly Devbox[]): void {
    for (const d of boxes) this.lifecycle.endedElsewhere(d.id);
  }

  async keepAlive(accountId: string, id: string): Promise<void> {
    if (!(await this.store.keepAlive(accountId, id, Date.now()))) {
      const d = await this.get(accountId, id);
      throw ERRORS.devboxEnded(id, d.status);
    }
    this.touch(id);
  }

  /** Resolves with the devbox once it is in one of `statuses`, or null when the hold ends first. */
  async waitForStatus(accountId: string, id: string, statuses: DevboxStatus[], timeoutMs: number, signal?: AbortSignal): Promise<Devbox | null> {
    const first = await this.get(accountId, id);
    if (statuses.includes(first.status)) return first;
    return new Promise((resolve) => {
      let settled = false;
      let reading = false;
      let again = false;
      const done = (d: Devbox | null) => {
        if (settled) return;
        settled = true;
        unsubscribe();
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        resolve(d);
      };
      // One re-read at a time; an event during a read makes it read once more, so no change is missed.
      const check = async () => {
        if (reading) {
          again = true;
          return;
        }
        reading = true;
        try {
          do {
            again = false;
            const d = await this.store.getById(id);
            if (d && statuses.includes(d.status)) return done(d);
          } while (again && !settled);
        } catch (err) {
          this.log.error({ err, devbox: id }, 'status re-read failed');
        } finally {
          reading = false;
        }
      };
      const unsubscribe = this.events.subscribe(id, () => void check());
      const timer = setTimeout(() => done(null), timeoutMs);
      const onAbort = () => done(null);
      signal?.addEventListener('abort', onAbort);
      // A change between the first read and the subscription has no event left to wake us: read once now.
      void check();
    });
  }

  async usage(accountId: string, id: string): Promise<{ devbox: Devbox; stats: SandboxStats | null }> {
    const d = await this.get(accountId, id);
    const box = this.lifecycle.active.get(id);
    return { devbox: d, stats: box ? await box.sandbox.stats().catch(() => null) : null };
  }

  /** For executions, files and snapshots: the box and its live sandbox; 404 if unknown, 400 if not running. */
  async requireRunning(accountId: string, id: string): Promise<{ devbox: Devbox; sandbox: Sandbox }> {
    const devbox = await this.get(accountId, id);
    const box = this.lifecycle.active.get(id);
    if (devbox.status !== 'running' || !box) {
      throw ERRORS.devboxNotRunning(id, devbox.status);
    }
    return { devbox, sandbox: box.sandbox };
  }

  /** The environment a box's processes get: what providers contribute (secrets), then the box's own. */
  async environmentOf(d: Devbox): Promise<Record<string, string>> {
    if (!this.ext.environment.length) return d.environment;
    const env: Record<string, string> = {};
    for (const provide of this.ext.environment) Object.assign(env, await provide(d));
    return { ...env, ...d.environment };
  }

  /** Fields the view carries beyond the record, by wire name, from every enricher. */
  async enrichments(d: Devbox): Promise<Record<string, unknown>> {
    // Concurrent: each enricher reads its own table, and a GET waits for all of them; none reads for a part
    // the box never had.
    const parts = await Promise.all(this.ext.enrichers.map((e) => (d.viewParts && !d.viewParts.includes(e.part) ? e.none : e.enrich(d))));
    return Object.assign({}, ...parts) as Record<string, unknown>;
  }

  /** Marks the box active now (idle timer). */
  touch(id: string): void {
    const box = this.lifecycle.active.get(id);
    if (box) box.lastActivityMs = Date.now();
  }

  /** Counts a command in flight (+1) or done (-1): a busy box is never idle. */
  busy(id: string, delta: 1 | -1): void {
    const box = this.lifecycle.active.get(id);
    if (!box) return;
    box.busy = Math.max(0, box.busy + delta);
    box.lastActivityMs = Date.now();
  }
}
