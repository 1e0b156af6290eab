/**
 * The caller's side of `Calls` (node.proto): unary calls as messages on one long-lived stream, answered by
 * id. A gRPC unary call opens an HTTP/2 stream with headers and metadata and walks grpc-js's call stack in
 * both processes; a message on an open stream does none of that, which is most of what a call costs between
 * two processes on one host (bench/README.md, "Node agent RPC hop").
 *
 * Each method's request and reply keep their own proto messages (encoded with the method's own serializers),
 * so a call means the same on the stream as it does as a unary call.
 */
import * as grpc from '@grpc/grpc-js';
import { fromCode, fromStatus, type Message, type Stream, statusOf } from './protocol.js';

interface Pending {
  method: string;
  request: object;
  resolve(reply: unknown): void;
  reject(err: Error): void;
}

/** The stream was refused as unknown: the agent predates `Calls`, and is called the unary way instead. */
class CallsUnsupported extends Error {}

export class CallMux {
  private stream: Stream | undefined;
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  /** Set once the agent refused the stream (it predates it): every call is a unary call then. */
  private unsupported = false;

  constructor(
    private readonly methods: grpc.ServiceDefinition,
    private readonly open: () => Stream,
    /** Where a call goes once the agent is known to predate `Calls` (pending ones included). */
    private readonly unary: (method: string, request: object) => Promise<unknown>,
  ) {}

  call<T>(method: string, request: object, signal?: AbortSignal): Promise<T> {
    if (this.unsupported) return this.unary(method, request) as Promise<T>;
    const def = this.methods[method];
    if (!def || def.requestStream || def.responseStream) throw new TypeError(`${method} is not a unary call of the node agent`);
    const stream = this.stream ?? this.start();
    const id = this.nextId;
    this.nextId = this.nextId >= 0xffff_ffff ? 1 : this.nextId + 1;
    return new Promise<T>((resolve, reject) => {
      const onAbort = () => {
        if (!this.pending.delete(id)) return;
        if (this.stream === stream) stream.write({ id, cancel: true });
        reject(Object.assign(new Error(`${method} cancelled`), { rpcStatus: grpc.status.CANCELLED }));
      };
      const settle = () => signal?.removeEventListener('abort', onAbort);
      this.pending.set(id, {
        method,
        request,
        resolve: (reply) => {
          settle();
          resolve(reply as T);
        },
        reject: (err) => {
          settle();
          reject(err);
        },
      });
      signal?.addEventListener('abort', onAbort, { once: true });
      stream.write({ id, method, request: def.requestSerialize(request) });
    });
  }

  private start(): Stream {
    const stream = this.open();
    this.stream = stream;
    stream.on('data', (out: Message) => {
      const id = out.id as number;
      const p = this.pending.get(id);
      if (!p) return;
      this.pending.delete(id);
      const code = out.error_code as string;
      if (code) p.reject(fromCode(code, out.error as string, statusOf(code)));
      else p.resolve(this.methods[p.method]!.responseDeserialize(out.reply as Buffer));
    });
    stream.on('error', (err: grpc.ServiceError) => this.ended(stream, err.code === grpc.status.UNIMPLEMENTED ? new CallsUnsupported() : fromStatus(err)));
    // An agent that goes away mid-call ends the stream with an error; a clean end is an agent that stops.
    stream.on('end', () => this.ended(stream, Object.assign(new Error('the node agent closed its call stream'), { rpcStatus: grpc.status.UNAVAILABLE })));
    return stream;
  }

  /** The calls of a stream that ended fail as a unary call would have (callers retry an UNAVAILABLE agent). */
  private ended(stream: Stream, err: Error): void {
    if (this.stream !== stream) return;
    this.stream = undefined;
    const calls = [...this.pending.values()];
    this.pending.clear();
    if (err instanceof CallsUnsupported) this.unsupported = true;
    for (const p of calls) {
      if (this.unsupported) this.unary(p.method, p.request).then(p.resolve, p.reject);
      else p.reject(err);
    }
  }

  close(): void {
    this.stream?.end();
    this.stream = undefined;
  }
}
