import { EventEmitter } from 'node:events';
import { newId } from '../../lib/ids.js';
import type { Sandbox } from '../../runtime/driver.js';
import type { Devbox } from '../devboxes/index.js';
import { droppedMarker, REMOVED_MARKER, STREAM_CHUNK, tailLines, utf8Prefix, utf8Start } from './output.js';
import type { OutputBudget } from './output-budget.js';
import { SegmentReader } from './output-segments.js';
import { BoxJob, type BoxJobSpec } from './box-job.js';
import type { OutputStream } from './types.js';

export interface OutputTail {
  text: string;
  truncated: boolean;
  /** The output was removed (its box ended, or the box's output budget evicted it): `text` says so. */
  removed?: true;
}

export interface OutputChunk {
  output: string;
  /** Byte position just after this chunk in the stream. */
  offset: number;
}

/** What a follower needs to know of a job on each turn: its bytes so far, and whether more can come. */
export interface FollowState {
  bytes: Record<OutputStream, number>;
  /** Nothing will write to the stream any more. */
  final: boolean;
  /** The live job's version (see BoxJob), to wait for the next change; -1 once it is gone. */
  version: number;
}

/**
 * Runs commands in boxes and reads what they printed: creates BoxJobs, wakes those who wait for a job to
 * change, and serves output tails and followed streams from the kept segments. The API's executions build on
 * it; anything else that needs "run this in the box, keep output and exit status" (scorers, repository
 * inspections, blueprint builds) uses `run`.
 */
export class BoxJobs {
  private readonly changes = new EventEmitter().setMaxListeners(0);

  constructor(readonly outputs: OutputBudget) {}

  create(devboxId: string, id: string = newId('job')): BoxJob {
    return new BoxJob(devboxId, id, this.outputs, this.changes);
  }

  /** Runs `spec` in the box to completion: the job (its output stays readable by its id) and its exit status. */
  async run(devbox: Devbox, sandbox: Sandbox, spec: BoxJobSpec, id?: string): Promise<BoxJob> {
    const job = this.create(devbox.id, id);
    const exitStatus = await job.run(sandbox, spec).catch(() => null);
    job.complete(exitStatus);
    job.bump();
    await job.closed;
    return job;
  }

  /** Calls `listener` on every change of job `id` until the returned function is called. */
  subscribe(id: string, listener: () => void): () => void {
    this.changes.on(id, listener);
    return () => this.changes.off(id, listener);
  }

  /** Resolves when job `id` changes after `version` (at once if `stale`), or on abort. */
  changed(id: string, stale: boolean, signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      if (stale || signal.aborted) return resolve();
      const done = () => {
        this.changes.off(id, done);
        signal.removeEventListener('abort', done);
        resolve();
      };
      this.changes.on(id, done);
      signal.addEventListener('abort', done);
    });
  }

  /** The last `lastN` lines of each stream of a job that has written `bytes`. */
  async tail(devboxId: string, id: string, bytes: Record<OutputStream, number>, lastN: number): Promise<Record<OutputStream, OutputTail>> {
    const [stdout, stderr] = await Promise.all([
      tailLines(this.outputs.stream(devboxId, id, 'stdout'), bytes.stdout, lastN),
      tailLines(this.outputs.stream(devboxId, id, 'stderr'), bytes.stderr, lastN),
    ]);
    return { stdout, stderr };
  }

  /**
   * One output stream from byte `offset`: what is kept (spooled or in the blob store), then new bytes as they land, until the job
   * is final and everything was read. Chunks end on UTF-8 character boundaries. A position in a dropped range
   * gets a marker chunk whose offset is where kept bytes resume; removed output gets a marker.
   */
  async *follow(
    devboxId: string,
    id: string,
    stream: OutputStream,
    offset: number,
    signal: AbortSignal,
    state: () => Promise<FollowState | undefined>,
    isCurrent: (version: number) => boolean,
  ): AsyncGenerator<OutputChunk> {
    let pos = offset;
    let resumed = false;
    const reader = new SegmentReader(this.outputs.stream(devboxId, id, stream));
    try {
      while (!signal.aborted) {
        const s = await state();
        if (!s) return;
        const bytes = s.bytes[stream];
        if (pos < bytes) {
          const got = await reader.read(pos, bytes, STREAM_CHUNK);
          if ('gone' in got) {
            yield { output: REMOVED_MARKER, offset: bytes };
            return;
          }
          if ('resumeAt' in got) {
            yield { output: droppedMarker(got.resumeAt - pos), offset: got.resumeAt };
            pos = got.resumeAt;
            resumed = true;
            continue;
          }
          let buf = got.bytes;
          if (resumed) {
            // Kept bytes may resume inside a character: start at the next whole one.
            const skip = utf8Start(buf, 0);
            pos += skip;
            buf = buf.subarray(skip);
            resumed = skip === got.bytes.length;
          }
          const cut = s.final && pos + buf.length >= bytes ? buf.length : utf8Prefix(buf, buf.length);
          if (cut > 0) {
            pos += cut;
            yield { output: buf.toString('utf8', 0, cut), offset: pos };
            continue;
          }
          if (buf.length < got.bytes.length) continue;
        }
        if (s.final) return;
        await this.changed(id, !isCurrent(s.version), signal);
      }
    } finally {
      await reader.close();
    }
  }
}
