import { EventEmitter } from 'node:events';

/**
 * Wakes waiters (wait_for_status, create_and_await_running, log tails) when a devbox changes. Only a
 * notification: waiters re-read the store, so a later multi-replica build can feed it from the database.
 */
export class StatusEvents {
  private readonly emitter = new EventEmitter().setMaxListeners(0);

  notify(devboxId: string): void {
    this.emitter.emit(devboxId);
  }

  /** Calls `fn` on every change until the returned function is called. */
  subscribe(devboxId: string, fn: () => void): () => void {
    this.emitter.on(devboxId, fn);
    return () => this.emitter.off(devboxId, fn);
  }
}
