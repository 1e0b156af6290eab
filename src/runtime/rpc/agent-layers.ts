/**
 * Layers in and out of a node (snapshots and blueprint layers moving through the blob store): the driver's
 * archive streams carried as gRPC streams, with flow control both ways, so a layer of gigabytes never sits
 * whole in either process.
 */
import { PassThrough } from 'node:stream';
import type * as grpc from '@grpc/grpc-js';
import type { RuntimeDriver } from '../driver.js';
import { toStatus } from './protocol.js';

export function serveExport(call: grpc.ServerWritableStream<{ id: string }, unknown>, driver: RuntimeDriver): void {
  driver.exportLayer(call.request.id).then(
    (archive) => {
      call.on('cancelled', () => archive.destroy());
      // Found: an empty message first, so the caller's exportLayer resolves (or rejects) as in process.
      call.write({ data: Buffer.alloc(0) });
      archive.on('data', (chunk: Buffer) => {
        if (!call.write({ data: chunk })) {
          archive.pause();
          call.once('drain', () => archive.resume());
        }
      });
      archive.once('end', () => call.end());
      archive.once('error', (err) => call.emit('error', toStatus(err)));
    },
    (err) => call.emit('error', toStatus(err)),
  );
}

export async function serveImport(call: grpc.ServerReadableStream<Record<string, unknown>, unknown>, driver: RuntimeDriver): Promise<void> {
  const body = new PassThrough();
  let layer: string | undefined;
  let started: Promise<void> | undefined;
  const first = new Promise<void>((resolve, reject) => {
    call.on('data', (msg: Record<string, unknown>) => {
      if (layer === undefined) {
        if (msg.kind !== 'layer') return reject(new TypeError('an import starts with the layer id'));
        layer = msg.layer as string;
        started = driver.importLayer(layer, body);
        return resolve();
      }
      if (msg.kind === 'data' && !body.write(msg.data as Buffer)) {
        call.pause();
        body.once('drain', () => call.resume());
      }
    });
    call.once('end', () => {
      body.end();
      if (layer === undefined) reject(new TypeError('an import names its layer'));
    });
  });
  // A caller that goes away mid-archive: the driver sees a failed body and keeps nothing of it.
  call.once('cancelled', () => body.destroy(new Error('the import was abandoned')));
  await first;
  await started;
}
