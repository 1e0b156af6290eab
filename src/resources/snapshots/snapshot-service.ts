import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { DomainError, ERRORS } from '../../platform/errors.js';
import { newId } from '../../lib/ids.js';
import type { Logger } from '../../lib/logger.js';
import type { RuntimeDriver, Sandbox } from '../../runtime/driver.js';
import type { Page, PageQuery } from '../../platform/store/types.js';
import type { DevboxStore } from '../devboxes/index.js';
import type { SnapshotStore } from './snapshot-store.js';
import type { DevboxService } from '../devboxes/index.js';
import type { JobRunner } from '../../platform/jobs/job-runner.js';
import { DEVBOX_STATUSES, TERMINAL, type Devbox } from '../devboxes/index.js';
import { COMMIT_MESSAGE_MAX, type Snapshot, type SnapshotFilters, type SnapshotInput, type SnapshotStatus } from './types.js';

export const INTERRUPTED = 'the server stopped while the snapshot was being taken';

/** The durable job that sees a capture through: it settles the snapshot even if a restart cuts the copy. */
export const CAPTURE_JOB = 'snapshot.capture';

export interface SnapshotServiceOptions {
  /** Where the runtime keeps layers; stray `.tmp-*` copies and `.del-*` leftovers of a crash are removed at start. */
  layersDir?: string;
  /** DEVBOXD_NODE_NAME: recorded on each snapshot (its layer is here); reconcile touches only this node's. */
  node?: string;
  /** Layers other modules keep (blueprints' images): never collected. */
  layersInUse?: () => Promise<Iterable<string>>;
  /** A blueprint's layers: a snapshot's size counts only what lies above its blueprint. */
  blueprintLayers?: (blueprintId: string) => Promise<string[]>;
  /** The blob store's copies of layers (the layers module): a snapshot's are put there once it completes. */
  blobs?: {
    publish(layers: readonly string[]): Promise<{ uploaded: Promise<void> }>;
    drop(layers: readonly string[]): Promise<void>;
    collect(inUse: () => Promise<Set<string>>): Promise<void>;
  };
}

/**
 * Disk snapshots. A snapshot is in_progress in the database before its layer is copied; the runtime writes
 * the layer under a temporary name and renames it, so a layer that exists is whole. Layers are shared: a
 * snapshot's layers are its own plus its devbox's, and a layer is deleted only when nothing uses it.
 */
export class SnapshotService {
  /** Captures running in this process, by snapshot id. */
  private readonly running = new Map<string, Promise<Snapshot>>();
  /** Sizes of immutable layers, measured once. */
  private readonly sizes = new Map<string, number>();
  private collector: NodeJS.Timeout | undefined;
  private collecting = false;

  constructor(
    private readonly store: SnapshotStore,
    private readonly devboxStore: DevboxStore,
    private readonly devboxes: DevboxService,
    private readonly runtime: RuntimeDriver,
    private readonly log: Logger,
    /** Records each capture as a durable job (CAPTURE_JOB, handled by `settleCapture`). */
    private readonly jobs: JobRunner,
    private readonly opts: SnapshotServiceOptions = {},
  ) {}

  /** snapshot_disk_async: records the snapshot in_progress and copies the disk in the background. */
  async start(accountId: string, devboxId: string, input: SnapshotInput): Promise<Snapshot> {
    const { devbox, sandbox } = await this.devboxes.requireRunning(accountId, devboxId);
    return this.begin(devbox, sandbox, input);
  }

  /** snapshot_disk: like `start`, then waits up to `waitMs` for the copy (answers in_progress after that). */
  async take(accountId: string, devboxId: string, input: SnapshotInput, waitMs: number, signal?: AbortSignal): Promise<Snapshot> {
    const s = await this.start(accountId, devboxId, input);
    const done = await this.settle(s.id, waitMs, signal);
    if (done?.status === 'error') throw new DomainError('internal', `snapshot ${s.id} failed: ${done.errorMessage}`, false);
    return done ?? (await this.store.getById(s.id))!;
  }

  /**
   * Starts a capture of a box the caller already holds. Suspend uses it with its own name and metadata, and
   * with `stop`: the box's processes end and its writable layer becomes the snapshot's layer, uncopied.
   */
  async begin(devbox: Devbox, sandbox: Sandbox, input: SnapshotInput, opts: { stop?: boolean } = {}): Promise<Snapshot> {
    if (input.commitMessage && input.commitMessage.length > COMMIT_MESSAGE_MAX) {
      throw ERRORS.invalid(`commit_message is ${input.commitMessage.length} characters; at most ${COMMIT_MESSAGE_MAX} are allowed`);
    }
    const busy = await this.store.inProgressFor(devbox.id);
    if (busy) throw ERRORS.snapshotInProgress(`devbox ${devbox.id} already has a snapshot in progress (${busy.id})`);
    const id = newId('snp');
    const s: Snapshot = {
      id,
      accountId: devbox.accountId,
      sourceDevboxId: devbox.id,
      sourceBlueprintId: devbox.blueprintId,
      name: input.name || null,
      metadata: input.metadata ?? {},
      commitMessage: input.commitMessage || null,
      status: 'in_progress',
      errorMessage: null,
      sizeBytes: null,
      layers: [id, ...devbox.layers],
      createTimeMs: Date.now(),
      node: this.opts.node ?? '',
    };
    // The job is recorded first: a crash right after the snapshot's insert still finds the job to settle it.
    const job = await this.jobs.add(CAPTURE_JOB, id);
    try {
      // The unique index on in-progress snapshots turns a racing second begin into a conflict here.
      await this.store.insert(s);
    } catch (err) {
      await this.jobs.drop(job).catch(() => undefined);
      throw err;
    }
    const p = this.capture(s, sandbox, opts.stop ?? false).finally(() => this.running.delete(id));
    this.running.set(id, p);
    this.jobs.start(job);
    return s;
  }

  /** The finished snapshot, or null when it is still in progress after `waitMs`. */
  async settle(id: string, waitMs: number, signal?: AbortSignal): Promise<Snapshot | null> {
    const p = this.running.get(id);
    if (!p) {
      const s = await this.store.getById(id);
      return s && s.status !== 'in_progress' ? s : null;
    }
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    const timeout = new Promise<null>((resolve) => {
      timer = setTimeout(() => resolve(null), waitMs);
      onAbort = () => resolve(null);
      signal?.addEventListener('abort', onAbort);
    });
    try {
      return await Promise.race([p, timeout]);
    } finally {
      clearTimeout(timer);
      if (onAbort) signal?.removeEventListener('abort', onAbort);
    }
  }

  private async capture(s: Snapshot, sandbox: Sandbox, stop: boolean): Promise<Snapshot> {
    const started = Date.now();
    let sizeBytes: number;
    try {
      ({ sizeBytes } = await sandbox.snapshot(s.id, { stop }));
    } catch (err) {
      this.log.error({ err, snapshot: s.id, devbox: s.sourceDevboxId }, 'snapshot failed');
      await this.runtime.deleteLayer(s.id).catch(() => undefined);
      const message = (err as Error).message || 'the snapshot failed';
      return (await this.store.setStatus(s.id, ['in_progress'], 'error', { errorMessage: message })) ?? (await this.store.getById(s.id)) ?? s;
    }
    // The layer is whole from here on (on suspend it is the box's only disk): a failing store write below
    // throws, so the job retries and finds the layer complete; the layer itself is never dropped for it.
    this.sizes.set(s.id, sizeBytes);
    // Published before it shows complete: another node booting from it then waits for the upload.
    const { uploaded } = await this.publish(s);
    let total = sizeBytes;
    for (const layer of await this.sizedLayers(s, s.layers.slice(1))) total += await this.layerSize(layer);
    const now = (await this.store.setStatus(s.id, ['in_progress'], 'complete', { sizeBytes: total })) ?? (await this.store.getById(s.id)) ?? s;
    this.log.info({ snapshot: s.id, devbox: s.sourceDevboxId, bytes: sizeBytes, ms: Date.now() - started }, 'snapshot complete');
    // A suspend ends once its disk is in the blob store too, so the box resumes on any node from then on.
    if (stop) await uploaded;
    return now;
  }

  /** Puts the snapshot's layers in the blob store (each by a durable job); a failure is only logged. */
  private async publish(s: Snapshot): Promise<{ uploaded: Promise<void> }> {
    const done = { uploaded: Promise.resolve() };
    return (
      (await this.opts.blobs?.publish(s.layers).catch((err) => void this.log.error({ err, snapshot: s.id }, 'putting the layers in the blob store failed'))) ??
      done
    );
  }

  /** Those of `layers` the snapshot's size counts: not its blueprint's (the size is relative to it). */
  private async sizedLayers(s: Snapshot, layers: string[]): Promise<string[]> {
    if (!s.sourceBlueprintId || !this.opts.blueprintLayers) return layers;
    const base = new Set(await this.opts.blueprintLayers(s.sourceBlueprintId).catch(() => [] as string[]));
    return layers.filter((l) => !base.has(l));
  }

  private async layerSize(layer: string): Promise<number> {
    let n = this.sizes.get(layer);
    if (n === undefined) {
      n = await this.runtime.layerSize(layer).catch(() => 0);
      this.sizes.set(layer, n);
    }
    return n;
  }

  /** A snapshot the caller may see: deleted ones are gone. */
  async get(accountId: string, id: string): Promise<Snapshot> {
    const s = await this.store.get(accountId, id);
    if (!s || s.status === 'deleted') throw ERRORS.notFound('snapshot', id);
    return s;
  }

  /**
   * The status endpoint: a deleted snapshot is a 404 here too, as Runloop's API answers (its smoke test expects
   * the status of a deleted snapshot to fail), and the SDK's completion poller, which never stops on `deleted`,
   * fails instead of polling forever.
   */
  status(accountId: string, id: string): Promise<Snapshot> {
    return this.get(accountId, id);
  }

  list(accountId: string, page: PageQuery, filters: SnapshotFilters): Promise<Page<Snapshot>> {
    return this.store.list(accountId, page, filters);
  }

  /** Patch like devbox update: null/undefined leave a field, "" clears name and commit message, {} clears metadata. */
  async update(accountId: string, id: string, patch: SnapshotInput): Promise<Snapshot> {
    await this.get(accountId, id);
    if (patch.commitMessage && patch.commitMessage.length > COMMIT_MESSAGE_MAX) {
      throw ERRORS.invalid(`commit_message is ${patch.commitMessage.length} characters; at most ${COMMIT_MESSAGE_MAX} are allowed`);
    }
    const changes: { name?: string | null; metadata?: Record<string, string>; commitMessage?: string | null } = {};
    if (patch.name !== undefined && patch.name !== null) changes.name = patch.name || null;
    if (patch.metadata !== undefined && patch.metadata !== null) changes.metadata = patch.metadata;
    if (patch.commitMessage !== undefined && patch.commitMessage !== null) changes.commitMessage = patch.commitMessage || null;
    const s = await this.store.patch(accountId, id, changes);
    if (!s) throw ERRORS.notFound('snapshot', id);
    return s;
  }

  async delete(accountId: string, id: string): Promise<Snapshot> {
    const s = await this.get(accountId, id);
    if (s.status === 'in_progress') throw ERRORS.snapshotInProgress(`snapshot ${id} is still in progress; delete it once it completes`);
    const deleted = await this.store.setStatus(id, ['complete', 'error'], 'deleted');
    if (!deleted) {
      const now = await this.get(accountId, id);
      throw ERRORS.conflict(`snapshot ${id} is ${now.status}; delete it once it completes`);
    }
    // Its layers nothing else uses leave the blob store now; those still used, once the collection finds them unused.
    const gone = await this.collectLayers(deleted.layers);
    await this.opts.blobs?.drop(gone).catch((err) => this.log.error({ err, snapshot: id }, 'deleting the layers from the blob store failed'));
    return deleted;
  }

  /** What a box made from the snapshot starts from: its layers, and what it keeps of its source box. */
  async layersOf(accountId: string, snapshotId: string): Promise<{ layers: string[]; sourceBlueprintId: string | null; availablePorts: number[] | null }> {
    const s = await this.get(accountId, snapshotId);
    if (s.status !== 'complete') throw ERRORS.snapshotNotComplete(snapshotId, s.status);
    const source = await this.devboxStore.get(accountId, s.sourceDevboxId);
    const ports = (source?.launchParameters as { available_ports?: number[] | null } | undefined)?.available_ports;
    return { layers: s.layers, sourceBlueprintId: s.sourceBlueprintId, availablePorts: ports?.length ? ports : null };
  }

  async inProgressFor(devboxId: string): Promise<boolean> {
    return (await this.store.inProgressFor(devboxId)) !== undefined;
  }

  /** Layers any kept snapshot or any devbox that may boot again (live or suspended) stands on. */
  private async layersInUse(): Promise<Set<string>> {
    const used = new Set<string>();
    for (const s of await this.store.listByStatus(['in_progress', 'complete'])) for (const l of s.layers) used.add(l);
    const alive = DEVBOX_STATUSES.filter((st) => !TERMINAL.has(st));
    for (const d of await this.devboxStore.listByStatus(alive)) for (const l of d.layers) used.add(l);
    for (const l of (await this.opts.layersInUse?.()) ?? []) used.add(l);
    return used;
  }

  /** Deletes those of `candidates` nothing uses any more; resolves with them. */
  private async collectLayers(candidates: Iterable<string>): Promise<string[]> {
    const used = await this.layersInUse();
    const gone = [...new Set(candidates)].filter((l) => !used.has(l));
    for (const layer of gone) {
      this.sizes.delete(layer);
      await this.runtime
        .deleteLayer(layer)
        .then(() => this.log.info({ layer }, 'layer deleted'))
        .catch((err) => this.log.error({ err, layer }, 'layer delete failed'));
    }
    return gone;
  }

  /** Drops the layers of snapshots that are gone once nothing uses them (after devboxes end, for instance). */
  async collectGarbage(): Promise<void> {
    const gone = (await this.store.listByStatus(['deleted', 'error'], this.opts.node)).flatMap((s) => s.layers);
    await this.collectLayers(gone);
    await this.collectBlobs();
  }

  /** The blob store's layers nothing uses any more go, with this node's fetched copies of them. */
  private async collectBlobs(): Promise<void> {
    await this.opts.blobs?.collect(() => this.layersInUse()).catch((err) => this.log.error({ err }, "collecting the blob store's layers failed"));
  }

  /**
   * The capture job: waits for the copy this process runs, or, when none runs here (a restart cut it), the
   * snapshot is complete if its layer exists (the runtime renames a finished copy into place, so an existing
   * layer is whole) and error otherwise. Idempotent: only an in_progress snapshot changes.
   */
  async settleCapture(snapshotId: string): Promise<void> {
    const p = this.running.get(snapshotId);
    if (p) {
      await p;
      return;
    }
    const s = await this.store.getById(snapshotId);
    if (!s || s.status !== 'in_progress') return;
    if (await this.runtime.layerExists(s.id).catch(() => false)) {
      let total = 0;
      for (const layer of await this.sizedLayers(s, s.layers)) total += await this.layerSize(layer);
      await this.publish(s);
      await this.store.setStatus(s.id, ['in_progress'], 'complete', { sizeBytes: total });
      this.log.info({ snapshot: s.id }, 'snapshot found complete after restart');
    } else {
      await this.store.setStatus(s.id, ['in_progress'], 'error', { errorMessage: INTERRUPTED });
      this.log.warn({ snapshot: s.id }, 'snapshot interrupted by a restart');
    }
  }

  /**
   * The capture job failed its last attempt: the snapshot ends in error rather than stay in progress (which
   * would also keep its box from ever snapshotting again). Its layer, if any, goes with the layer collection.
   */
  async captureFailed(snapshotId: string, error: string): Promise<void> {
    if (await this.store.setStatus(snapshotId, ['in_progress'], 'error', { errorMessage: `the snapshot failed: ${error}` })) {
      this.log.error({ snapshot: snapshotId, error }, 'snapshot capture failed for good');
    }
  }

  /**
   * At start, once the jobs resumed (snapshots caught in progress are settled by their capture jobs): stray
   * temporary copies go, and layers nothing uses any more.
   */
  async reconcile(): Promise<void> {
    if (this.opts.layersDir) {
      const names = await readdir(this.opts.layersDir).catch(() => [] as string[]);
      for (const name of names.filter((n) => n.startsWith('.tmp-') || n.startsWith('.del-'))) {
        await rm(join(this.opts.layersDir, name), { recursive: true, force: true }).catch(() => undefined);
      }
    }
    await this.collectGarbage();
  }

  /**
   * Collects unused layers every `intervalMs`: a devbox that ends can free the layers of a snapshot deleted
   * while it still ran on them.
   */
  startCollector(intervalMs = 60_000): void {
    this.collector = setInterval(() => {
      if (this.collecting) return;
      this.collecting = true;
      void this.collectGarbage()
        .catch((err) => this.log.error({ err }, 'layer collection failed'))
        .finally(() => (this.collecting = false));
    }, intervalMs);
    this.collector.unref();
  }

  stop(): void {
    clearInterval(this.collector);
  }

  /** Snapshots in these states (suspend reconciliation reads them). */
  byStatus(statuses: SnapshotStatus[]): Promise<Snapshot[]> {
    return this.store.listByStatus(statuses, this.opts.node);
  }
}
