/** One API server's connection to one node agent: unary calls and streams, each with the cluster token. */
import * as grpc from '@grpc/grpc-js';
import { CallMux } from './call-mux.js';
import { fromStatus, grpcTarget, type Message, nodeClient, nodeService, type Stream, tokenMetadata } from './protocol.js';

/** How long a call waits for an agent that is not connected (restarting) before it fails. */
const RECONNECT_MS = 10_000;

export type { Message, Stream } from './protocol.js';

export interface ChannelOptions {
  /** `unix:/path` or `host:port`. */
  address: string;
  token: string;
  /** TLS toward an agent on another host (mutual when a key and certificate are given). */
  credentials?: grpc.ChannelCredentials;
}

export class Channel {
  private readonly client: grpc.Client & Record<string, (...args: unknown[]) => unknown>;
  private readonly md: grpc.Metadata;
  /** Unary calls go as messages on one stream (`Calls`), not as calls of their own. */
  private readonly mux = new CallMux(
    nodeService(),
    () => this.stream('Calls', { failFast: true }),
    (method, request) => this.unary(method, request),
  );

  constructor(readonly opts: ChannelOptions) {
    const Client = nodeClient();
    this.client = new Client(grpcTarget(opts.address), opts.credentials ?? grpc.credentials.createInsecure(), {
      // A dead peer (a host gone without closing its connections) is noticed within seconds, not at the
      // kernel's TCP timeout: the calls on it fail and the API server's watchers retry.
      'grpc.keepalive_time_ms': 10_000,
      'grpc.keepalive_timeout_ms': 5_000,
      'grpc.keepalive_permit_without_calls': 1,
      'grpc.max_receive_message_length': 8 << 20,
      'grpc.initial_reconnect_backoff_ms': 100,
      'grpc.max_reconnect_backoff_ms': 2_000,
    }) as never;
    this.md = tokenMetadata(opts.token);
  }

  /** Waits until the agent answers (it may still be starting), up to `ms`. */
  ready(ms: number): Promise<void> {
    return new Promise((resolve, reject) =>
      this.client.waitForReady(Date.now() + ms, (err) =>
        err ? reject(new Error(`no node agent answers at ${this.opts.address}: ${err.message}`)) : resolve(),
      ),
    );
  }

  /**
   * An agent that is restarting is waited for (up to RECONNECT_MS) before a call, so a restart is no error to
   * the caller; one that stays away fails the call then, rather than hold it for good.
   */
  private async connected(): Promise<void> {
    if (this.client.getChannel().getConnectivityState(true) === grpc.connectivityState.READY) return;
    await this.ready(RECONNECT_MS).catch(() => undefined);
  }

  /** A unary call of the agent; `signal` stops waiting for it (the agent drops its answer). */
  async call<T = Message>(method: string, request: object = {}, opts: { signal?: AbortSignal } = {}): Promise<T> {
    await this.connected();
    return this.mux.call<T>(method, request, opts.signal);
  }

  /** A unary call as a call of its own: for an agent that predates `Calls`. */
  private unary(method: string, request: object): Promise<unknown> {
    return new Promise((resolve, reject) =>
      this.client[method]!(request, this.md, (err: grpc.ServiceError | null, out: unknown) => (err ? reject(fromStatus(err)) : resolve(out))),
    );
  }

  /**
   * A stream starts at once (its caller holds it synchronously); gRPC queues its messages until connected.
   * `failFast`: it fails at once instead when the agent is not connected, as a unary call does.
   */
  stream(method: string, opts: { failFast?: boolean } = {}): Stream {
    const md = this.md.clone();
    if (!opts.failFast) md.setOptions({ waitForReady: true });
    return this.client[method]!(md, { deadline: Infinity }) as Stream;
  }

  /** A call whose answer is a stream (the request is sent whole). */
  serverStream(method: string, request: object): grpc.ClientReadableStream<Message> {
    return this.client[method]!(request, this.md) as grpc.ClientReadableStream<Message>;
  }

  /** A call whose request is a stream; `done` hears its one answer. */
  clientStream(method: string, done: (err: Error | null) => void): grpc.ClientWritableStream<Message> {
    return this.client[method]!(this.md, (err: grpc.ServiceError | null) => done(err ? fromStatus(err) : null)) as grpc.ClientWritableStream<Message>;
  }

  close(): void {
    this.mux.close();
    this.client.close();
  }
}
