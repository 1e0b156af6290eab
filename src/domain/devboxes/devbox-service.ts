import { ERRORS } from '../errors.js';
import { newId } from '../../lib/ids.js';
import type { Logger } from '../../lib/logger.js';
import type { Sandbox, SandboxStats } from '../../runtime/driver.js';
import type { DevboxStore, Page, PageQuery } from '../../store/types.js';
import { checkEnvironment, resolveSandboxSettings, type CreateDevboxInput } from './create-input.js';
import type { Lifecycle } from './lifecycle.js';
import type { HostCapacity } from './resources.js';
import type { StatusEvents } from './status-events.js';
import { TERMINAL, type Devbox, type DevboxStatus } from './types.js';

/** What devbox creation and shutdown need to know of snapshots (implemented by the snapshot service). */
export interface SnapshotLookup {
  /** Layers of a complete snapshot of this account, newest first; 404/400 otherwise. */
  layersOf(accountId: string, snapshotId: string): { layers: string[]; sourceBlueprintId: string | null };
  inProgressFor(devboxId: string): boolean;
}

/** The devbox API in domain terms; routes call one method each. */
export class DevboxService {
  private snapshots: SnapshotLookup | undefined;

  constructor(
    private readonly store: DevboxStore,
    private readonly lifecycle: Lifecycle,
    private readonly events: StatusEvents,
    private readonly log: Logger,
    private readonly host: HostCapacity,
  ) {}

  setSnapshotLookup(s: SnapshotLookup): void {
    this.snapshots = s;
  }

  create(accountId: string, input: CreateDevboxInput): Devbox {
    const id = newId('dbx');
    const name = input.name || null;
    const launchParameters = input.launchParameters ?? {};
    const sandbox = resolveSandboxSettings(id, name, launchParameters, this.host);
    const env = { ...(input.environmentVariables ?? {}) };
    checkEnvironment(env, 'environment_variables');
    for (const [envName, secret] of Object.entries(input.secrets ?? {})) {
      throw ERRORS.notFound('secret', `${secret} (for ${envName})`);
    }
    if (input.blueprintId) throw ERRORS.notFound('blueprint', input.blueprintId);
    if (input.blueprintName) throw ERRORS.notFound('blueprint', input.blueprintName);
    let layers: string[] = [];
    let blueprintId: string | null = null;
    if (input.snapshotId) {
      if (!this.snapshots) throw ERRORS.notFound('snapshot', input.snapshotId);
      ({ layers, sourceBlueprintId: blueprintId } = this.snapshots.layersOf(accountId, input.snapshotId));
    }
    const now = Date.now();
    const d: Devbox = {
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
      entrypoint: input.entrypoint || null,
      blueprintId,
      snapshotId: input.snapshotId || null,
      layers,
      sandbox,
      stateTransitions: [{ status: 'provisioning', transitionTimeMs: now }],
      keepAliveAtMs: now,
    };
    this.store.insert(d);
    void this.lifecycle.boot(d, { fileMounts: input.fileMounts ?? {} }).catch((err) => this.log.error({ err, devbox: id }, 'boot failed'));
    return d;
  }

  get(accountId: string, id: string): Devbox {
    const d = this.store.get(accountId, id);
    if (!d) throw ERRORS.notFound('devbox', id);
    return d;
  }

  list(accountId: string, page: PageQuery, status?: DevboxStatus): Page<Devbox> {
    return this.store.list(accountId, page, status);
  }

  /** Patch: undefined/null leave a field; "" clears the name; {} clears the metadata. */
  update(accountId: string, id: string, patch: { name?: string | null; metadata?: Record<string, string> | null }): Devbox {
    const d = this.get(accountId, id);
    if (patch.name !== undefined && patch.name !== null) d.name = patch.name === '' ? null : patch.name;
    if (patch.metadata !== undefined && patch.metadata !== null) d.metadata = patch.metadata;
    this.store.update(d);
    return d;
  }

  async shutdown(accountId: string, id: string, force: boolean): Promise<Devbox> {
    const d = this.get(accountId, id);
    if (TERMINAL.has(d.status)) return d;
    if (!force && this.snapshots?.inProgressFor(id)) {
      throw ERRORS.snapshotInProgress(`devbox ${id} has a snapshot in progress; wait for it or shut down with force=true`);
    }
    return (await this.lifecycle.end(id, { status: 'shutdown', reason: 'api_shutdown' })) ?? d;
  }

  keepAlive(accountId: string, id: string): void {
    const d = this.get(accountId, id);
    if (TERMINAL.has(d.status)) throw ERRORS.devboxEnded(id, d.status);
    d.keepAliveAtMs = Date.now();
    this.store.update(d);
    this.touch(id);
  }

  /** Resolves with the devbox once it is in one of `statuses`, or null when the hold ends first. */
  async waitForStatus(accountId: string, id: string, statuses: DevboxStatus[], timeoutMs: number, signal?: AbortSignal): Promise<Devbox | null> {
    const first = this.get(accountId, id);
    if (statuses.includes(first.status)) return first;
    return new Promise((resolve) => {
      const done = (d: Devbox | null) => {
        unsubscribe();
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        resolve(d);
      };
      const unsubscribe = this.events.subscribe(id, () => {
        const d = this.store.getById(id);
        if (d && statuses.includes(d.status)) done(d);
      });
      const timer = setTimeout(() => done(null), timeoutMs);
      const onAbort = () => done(null);
      signal?.addEventListener('abort', onAbort);
    });
  }

  async usage(accountId: string, id: string): Promise<{ devbox: Devbox; stats: SandboxStats | null }> {
    const d = this.get(accountId, id);
    const box = this.lifecycle.active.get(id);
    return { devbox: d, stats: box ? await box.sandbox.stats().catch(() => null) : null };
  }

  /** For executions, files and snapshots: the box and its live sandbox; 404 if unknown, 400 if not running. */
  requireRunning(accountId: string, id: string): { devbox: Devbox; sandbox: Sandbox } {
    const devbox = this.get(accountId, id);
    const box = this.lifecycle.active.get(id);
    if (devbox.status !== 'running' || !box) {
      throw ERRORS.devboxNotRunning(id, devbox.status);
    }
    return { devbox, sandbox: box.sandbox };
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
