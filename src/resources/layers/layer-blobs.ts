import { createHash } from 'node:crypto';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { DomainError } from '../../platform/errors.js';
import type { BlobStore } from '../../platform/blob/types.js';
import type { JobRunner } from '../../platform/jobs/job-runner.js';
import type { Logger } from '../../lib/logger.js';
import type { RuntimeDriver } from '../../runtime/driver.js';
import type { LayerBlob, SqlLayerStore } from './sql-layer-store.js';

/** The durable job that copies one layer (its subject) into the blob store, retried until it is there. */
export const LAYER_UPLOAD_JOB = 'layer.upload';

/** How long a boot waits for a layer another node is still uploading. */
const UPLOAD_WAIT_MS = 30 * 60_000;
const FETCH_ATTEMPTS = 3;
/** Rows younger than this are not collected (see `collect`). */
const COLLECT_AFTER_MS = 10 * 60_000;

const keyOf = (layerId: string): string => `layers/${layerId}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface LayerBlobsOptions {
  /** DEVBOXD_NODE_NAME: the layers this node made and uploads, and those it fetched. */
  node: string;
  /** Whether `publish` copies layers (DEVBOXD_LAYER_BLOBS, resolved); fetches happen either way. */
  enabled: boolean;
  uploadWaitMs?: number;
}

/**
 * Layers in the blob store, so a box boots from a snapshot or blueprint on a node other than the one that
 * made its layers, and a suspended box resumes on any node. A layer is published once made (a durable upload
 * job per layer: the archive `exportLayer` streams, its size and sha256 recorded), fetched where a box needs
 * it and lacks it (checked against those, then `importLayer`; concurrent boots share one fetch), and its blob
 * and fetched copies are deleted once no snapshot, box or blueprint names it.
 */
export class LayerBlobs {
  private readonly fetches = new Map<string, Promise<void>>();

  constructor(
    private readonly store: SqlLayerStore,
    private readonly blobs: BlobStore,
    private readonly runtime: RuntimeDriver,
    private readonly jobs: JobRunner,
    private readonly log: Logger,
    private readonly opts: LayerBlobsOptions,
  ) {}

  get enabled(): boolean {
    return this.opts.enabled;
  }

  /**
   * Copies those of `layers` this node has and the blob store lacks, each by its job. Called before the
   * record naming the layers shows them complete: a node that boots from them then finds them stored or
   * `pending` (and waits), never unknown. `uploaded` resolves once each copy's first attempt ended (a failed
   * one keeps retrying in the background).
   */
  async publish(layers: readonly string[]): Promise<{ uploaded: Promise<void> }> {
    const started: string[] = [];
    if (this.opts.enabled) {
      for (const layer of new Set(layers)) {
        const row = await this.store.get(layer);
        if (row?.state === 'stored' || (row && row.node !== this.opts.node)) continue;
        if (!row && !(await this.runtime.layerExists(layer))) continue;
        // A pending row of this node with no job (the server died between the two) gets its job again.
        await this.store.claim(layer, this.opts.node);
        const job = await this.jobs.add(LAYER_UPLOAD_JOB, layer).catch((err) => {
          if (err instanceof DomainError && err.code === 'conflict') return null; // its upload is under way
          throw err;
        });
        if (!job) continue;
        this.jobs.start(job);
        started.push(job.id);
      }
    }
    const uploaded = (async () => {
      for (const id of started) await this.jobs.settled(id);
    })();
    return { uploaded };
  }

  /** The upload job: streams the layer's archive into the blob store and records its size and digest. */
  async upload(layerId: string): Promise<void> {
    const row = await this.store.get(layerId);
    if (!row || row.state === 'stored') return;
    if (!(await this.runtime.layerExists(layerId))) {
      // Deleted before it was uploaded: nothing names it any more.
      await this.store.forget(layerId);
      return;
    }
    const started = Date.now();
    const hash = createHash('sha256');
    let size = 0;
    const counted = new Transform({
      transform(chunk: Buffer, _enc, cb) {
        hash.update(chunk);
        size += chunk.length;
        cb(null, chunk);
      },
    });
    const archive = await this.runtime.exportLayer(layerId);
    const feeding = pipeline(archive, counted);
    feeding.catch(() => undefined);
    await this.blobs.put(keyOf(layerId), counted);
    await feeding;
    if (!(await this.store.stored(layerId, size, hash.digest('hex')))) {
      // Collected while it uploaded: the blob is nobody's.
      await this.blobs.delete(keyOf(layerId)).catch(() => undefined);
      return;
    }
    this.log.info({ layer: layerId, bytes: size, ms: Date.now() - started }, 'layer stored in the blob store');
  }

  /**
   * The first of `layers` a box could not boot from here: not on this node, and not in the blob store (nor
   * being put there). Undefined when `ensureLocal` can make all of them local.
   */
  async unavailable(layers: readonly string[]): Promise<string | undefined> {
    for (const layer of layers) if (!(await this.runtime.layerExists(layer)) && !(await this.store.get(layer))) return layer;
    return undefined;
  }

  /** Makes every layer of `layers` local, fetching those this node lacks (each once, however many boots wait). */
  async ensureLocal(layers: readonly string[]): Promise<void> {
    const missing: string[] = [];
    for (const layer of layers) if (!(await this.runtime.layerExists(layer))) missing.push(layer);
    await Promise.all(
      missing.map((layer) => {
        let p = this.fetches.get(layer);
        if (!p) {
          p = this.fetch(layer).finally(() => this.fetches.delete(layer));
          this.fetches.set(layer, p);
        }
        return p;
      }),
    );
  }

  private async fetch(layerId: string): Promise<void> {
    const row = await this.uploaded(layerId);
    // Recorded first: a copy this node holds is always one its collection knows of.
    await this.store.addCopy(layerId, this.opts.node);
    const started = Date.now();
    for (let attempt = 1; ; attempt++) {
      try {
        const body = await this.blobs.get(keyOf(layerId));
        const checked = verified(row);
        pipeline(body, checked).catch(() => undefined);
        await this.runtime.importLayer(layerId, checked);
        this.log.info({ layer: layerId, bytes: row.sizeBytes, ms: Date.now() - started }, 'layer fetched from the blob store');
        return;
      } catch (err) {
        if (attempt >= FETCH_ATTEMPTS) throw new Error(`layer ${layerId} could not be fetched from the blob store: ${(err as Error).message}`);
        this.log.warn({ err, layer: layerId, attempt }, 'layer fetch failed; trying again');
        await sleep(1000 * attempt);
      }
    }
  }

  /** The layer's row once it is stored, waiting while the node that made it still uploads it. */
  private async uploaded(layerId: string): Promise<LayerBlob & { sizeBytes: number; sha256: string }> {
    const until = Date.now() + (this.opts.uploadWaitMs ?? UPLOAD_WAIT_MS);
    for (;;) {
      const row = await this.store.get(layerId);
      if (!row) throw new Error(`layer ${layerId} is not on this node, and no node put it in the blob store (see DEVBOXD_LAYER_BLOBS)`);
      if (row.state === 'stored' && row.sizeBytes !== null && row.sha256 !== null) return { ...row, sizeBytes: row.sizeBytes, sha256: row.sha256 };
      if (Date.now() > until) throw new Error(`layer ${layerId} is still being put in the blob store by node ${row.node}`);
      await sleep(1000);
    }
  }

  /** Deletes the blob store's copy of each layer (nothing names them any more). */
  async drop(layers: readonly string[]): Promise<void> {
    for (const layer of layers) {
      await this.blobs.delete(keyOf(layer));
      await this.store.forget(layer);
    }
  }

  /**
   * Deletes the blobs of layers nothing uses any more, and this node's fetched copies of them. `inUse` is
   * read after the rows, so a layer a record named when its row was listed is in it.
   */
  async collect(inUse: () => Promise<Set<string>>): Promise<void> {
    // A young row may be a layer published just before its record names it (a blueprint's, before its build
    // shows complete): rows are collected once older than that moment can last.
    const rows = await this.store.listIds(Date.now() - COLLECT_AFTER_MS);
    const copies = await this.store.copies(this.opts.node);
    if (!rows.length && !copies.length) return;
    const used = await inUse();
    const gone = rows.filter((l) => !used.has(l));
    await this.drop(gone);
    for (const layer of copies.filter((l) => !used.has(l))) {
      await this.runtime.deleteLayer(layer);
      await this.store.dropCopy(layer, this.opts.node);
    }
    if (gone.length) this.log.info({ layers: gone.length }, 'unused layers deleted from the blob store');
  }
}

/** Passes a blob on, failing at its end unless its size and sha256 are those recorded at upload. */
function verified(row: { layerId: string; sizeBytes: number; sha256: string }): Transform {
  const hash = createHash('sha256');
  let n = 0;
  return new Transform({
    transform(chunk: Buffer, _enc, cb) {
      n += chunk.length;
      if (n > row.sizeBytes) return cb(new Error(`the blob of layer ${row.layerId} is longer than the ${row.sizeBytes} bytes uploaded`));
      hash.update(chunk);
      cb(null, chunk);
    },
    flush(cb) {
      if (n !== row.sizeBytes || hash.digest('hex') !== row.sha256) return cb(new Error(`the blob of layer ${row.layerId} is not the one uploaded`));
      cb();
    },
  });
}
