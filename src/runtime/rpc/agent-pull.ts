/**
 * PullImage on the agent: the driver's progress lines and layers go to the caller as they come, and each
 * layer waits for the caller's word that it recorded it (its `onLayer`) before the pull goes on, as in
 * process. A caller that goes away aborts the pull.
 */
import type * as grpc from '@grpc/grpc-js';
import type { RegistryAuth, RuntimeDriver } from '../driver.js';
import { toStatus } from './protocol.js';

type Call = grpc.ServerDuplexStream<Record<string, unknown>, unknown>;

export function servePull(call: Call, driver: RuntimeDriver): void {
  const abort = new AbortController();
  const acks: (() => void)[] = [];
  call.on('cancelled', () => abort.abort());
  call.on('error', () => abort.abort());
  call.on('data', (msg: Record<string, unknown>) => {
    if (msg.kind === 'layer_recorded') return void acks.shift()?.();
    if (msg.kind !== 'start') return;
    const start = msg.start as { ref: string; auth: string };
    driver
      .pullImage(start.ref, {
        auth: start.auth ? (JSON.parse(start.auth) as RegistryAuth) : undefined,
        signal: abort.signal,
        onProgress: (line) => void call.write({ progress: line }),
        onLayer: (layer) =>
          new Promise<void>((resolve, reject) => {
            if (abort.signal.aborted) return reject(new Error('the pull was abandoned'));
            acks.push(resolve);
            abort.signal.addEventListener('abort', () => reject(new Error('the pull was abandoned')), { once: true });
            call.write({ layer });
          }),
      })
      .then(
        (image) => {
          call.write({ image: JSON.stringify(image) });
          call.end();
        },
        (err) => call.emit('error', toStatus(err)),
      );
  });
}
