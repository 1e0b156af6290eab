/**
 * The agent's side of `Calls` (node.proto): the unary calls, as messages on one stream. Each input runs the
 * same handler its unary call runs, at once (calls on one stream do not wait for each other), and is answered
 * by its id when done, unless the caller cancelled it or closed the stream first.
 */
import type * as grpc from '@grpc/grpc-js';
import { errorCode } from './protocol.js';

export type Unary = (req: Record<string, unknown>) => Promise<unknown> | unknown;

interface CallInput {
  id: number;
  method: string;
  request: Buffer;
  cancel: boolean;
}

export function serveCalls(call: grpc.ServerDuplexStream<CallInput, unknown>, methods: grpc.ServiceDefinition, unary: Record<string, Unary>): void {
  /** Calls still to be answered. */
  const open = new Set<number>();
  const answer = (id: number, out: object) => {
    if (!open.delete(id) || call.destroyed || call.writableEnded) return;
    call.write({ id, ...out });
  };
  call.on('data', (input: CallInput) => {
    const { id, method } = input;
    if (input.cancel) return void open.delete(id);
    open.add(id);
    const fn = Object.hasOwn(unary, method) ? unary[method] : undefined;
    const def = methods[method];
    if (!fn || !def) return answer(id, { error_code: 'invalid', error: `the node agent has no call ${JSON.stringify(method)}` });
    Promise.resolve()
      .then(() => fn(def.requestDeserialize(input.request)))
      .then(
        (out) => answer(id, { reply: def.responseSerialize(out ?? {}) }),
        (err: unknown) => answer(id, { error_code: errorCode(err), error: (err as Error)?.message ?? String(err) }),
      );
  });
  // The caller is done (its API server stops): answers still owed are not sent.
  call.on('end', () => {
    open.clear();
    call.end();
  });
  call.on('error', () => open.clear());
}
