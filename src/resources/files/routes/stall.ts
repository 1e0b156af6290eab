import type { Readable } from 'node:stream';
import { ERRORS, type DomainError } from '../../../platform/errors.js';

/**
 * Watches a request body for a client that stopped sending (a body shorter than its content-length, a client
 * that hangs): no byte for `ms` while the server is ready for more. A body paused by back-pressure is the box
 * being the slow side, not the client, and does not count. On a stall `stalled` rejects and the file part
 * being read ends with the same error, so every wait of the upload ends at once with a 408.
 */
export class StallWatch {
  readonly stalled: Promise<never>;
  private fail!: (err: DomainError) => void;
  private timer: NodeJS.Timeout | undefined;
  private part: Readable | undefined;
  private stopped = false;

  constructor(
    private readonly body: Readable,
    private readonly ms: number,
  ) {
    this.stalled = new Promise<never>((_, reject) => (this.fail = reject));
    this.stalled.catch(() => undefined);
  }

  /** Starts counting. Call once the body is piped to its parser: a 'data' listener must not start the flow. */
  start(): void {
    this.body.on('data', this.arm);
    this.arm();
  }

  /** The file part now being read: a stall ends it too. */
  follow(part: Readable): void {
    this.part = part;
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.body.off('data', this.arm);
  }

  private readonly arm = (): void => {
    if (this.stopped) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(this.check, this.ms);
  };

  private readonly check = (): void => {
    if (this.stopped || this.body.readableEnded || this.body.destroyed) return;
    if (this.body.readableFlowing === false) return this.arm();
    const err = ERRORS.waitTimeout(`the request body stalled: no byte arrived for ${this.ms / 1000} s; nothing was changed`);
    this.stop();
    this.part?.destroy(err);
    this.fail(err);
  };
}
