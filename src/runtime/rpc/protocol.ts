/**
 * What both ends of the node agent's RPC share: the service definition (node.proto, loaded at start), how a
 * driver error crosses the wire, and how a caller proves it may call.
 *
 * gRPC rather than a protocol of our own: the RPC needs bidirectional byte streams with flow control
 * (process stdio, tunnels), deadlines, TLS and mutual TLS between hosts, and versioned messages. grpc-js is
 * pure JavaScript (nothing to compile) and is what Kubernetes' CRI, the seam a Pod-per-box driver plugs into
 * later, speaks.
 */
import { timingSafeEqual } from 'node:crypto';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { INSTALL_ROOT } from '../../lib/install-root.js';
import { SandboxError } from '../driver.js';

/** The protocol an agent speaks (the proto package); a client refuses an agent that speaks another. */
export const PROTOCOL = 'devboxd.node.v1';

/** Metadata key of a driver error's code, beside the gRPC status (whose message carries the text). */
const ERROR_KEY = 'devboxd-error';
/** The agent holds no handle of that sandbox (it restarted): the caller adopts it again and retries. */
export const UNKNOWN_SANDBOX = 'unknown_sandbox';

/** A message of a call, as proto-loader decodes it (`kind` names the member of its oneof). */
export type Message = Record<string, unknown> & { kind?: string };
/** A call with a stream each way. */
export type Stream = grpc.ClientDuplexStream<Message, Message>;

type ErrorCode = SandboxError['code'] | typeof UNKNOWN_SANDBOX | 'invalid';

let definition: grpc.ServiceDefinition | undefined;

/** The Node service, loaded once per process from the checkout's node.proto. */
export function nodeService(): grpc.ServiceDefinition {
  if (definition) return definition;
  const pkg = protoLoader.loadSync(path.join(INSTALL_ROOT, 'src', 'runtime', 'rpc', 'node.proto'), {
    keepCase: true,
    longs: Number,
    defaults: true,
    oneofs: true,
  });
  const root = grpc.loadPackageDefinition(pkg) as unknown as { devboxd: { node: { v1: { Node: { service: grpc.ServiceDefinition } } } } };
  definition = root.devboxd.node.v1.Node.service;
  return definition;
}

/** A constructor of Node clients (a client per channel). */
export function nodeClient(): grpc.ServiceClientConstructor {
  return grpc.makeGenericClientConstructor(nodeService(), 'Node');
}

/** What kind of failure a handler's error is, as the caller learns it (`fromCode` turns it back). */
export function errorCode(err: unknown): ErrorCode {
  return err instanceof SandboxError ? err.code : err instanceof TypeError ? 'invalid' : ((err as { rpcCode?: ErrorCode }).rpcCode ?? 'failed');
}

/** The gRPC status of a handler's failure: never UNAVAILABLE, which callers read as "the agent is away". */
export function statusOf(code: string): grpc.status {
  return code === 'not_found' || code === UNKNOWN_SANDBOX ? grpc.status.NOT_FOUND : code === 'capacity' ? grpc.status.RESOURCE_EXHAUSTED : grpc.status.UNKNOWN;
}

/** The error a handler answers with: the driver's code and message travel, the stack stays on the node. */
export function toStatus(err: unknown): grpc.ServiceError {
  const code = errorCode(err);
  const metadata = new grpc.Metadata();
  metadata.set(ERROR_KEY, code);
  const message = (err as Error)?.message ?? String(err);
  return Object.assign(new Error(message), { code: statusOf(code), details: message, metadata });
}

/** An error a handler throws when the id names no sandbox it holds. */
export function unknownSandbox(id: string): Error {
  return Object.assign(new Error(`the node agent holds no sandbox ${id}`), { rpcCode: UNKNOWN_SANDBOX });
}

/** The caller's side: a driver error as the driver would have thrown it, else the transport's error. */
export function fromStatus(err: grpc.ServiceError): Error {
  return fromCode(err.metadata?.get(ERROR_KEY)[0]?.toString(), err.details || err.message, err.code);
}

/** A handler's failure from its code and message (`errorCode`); `rpcStatus` is the call's gRPC status. */
export function fromCode(code: string | undefined, message: string, rpcStatus: grpc.status): Error {
  const status = { rpcStatus };
  if (code === 'not_found' || code === 'capacity' || code === 'failed') return Object.assign(new SandboxError(code, message), status);
  if (code === 'invalid') return Object.assign(new TypeError(message), status);
  if (code === UNKNOWN_SANDBOX) return Object.assign(new Error(message), { rpcCode: UNKNOWN_SANDBOX }, status);
  return Object.assign(new SandboxError('failed', `node agent: ${message}`), status);
}

export function isUnknownSandbox(err: unknown): boolean {
  return (err as { rpcCode?: string })?.rpcCode === UNKNOWN_SANDBOX;
}

/** The transport failed (the agent is down or restarting), as opposed to the call itself failing. */
export function isUnavailable(err: unknown): boolean {
  const code = (err as { rpcStatus?: number })?.rpcStatus;
  return code === grpc.status.UNAVAILABLE;
}

/** Metadata that carries the cluster token. */
export function tokenMetadata(token: string): grpc.Metadata {
  const md = new grpc.Metadata();
  md.set('authorization', `Bearer ${token}`);
  return md;
}

/** Whether a call carries the cluster token (compared in constant time). */
export function hasToken(md: grpc.Metadata, token: string): boolean {
  const got = Buffer.from(String(md.get('authorization')[0] ?? ''));
  const want = Buffer.from(`Bearer ${token}`);
  return got.length === want.length && timingSafeEqual(got, want);
}

/**
 * An agent's address: `unix:/abs/path` (one host) or `host:port` (between hosts; TLS when certificates are
 * given). Returns the gRPC target.
 */
export function grpcTarget(address: string): string {
  if (address.startsWith('unix:')) return `unix://${path.resolve(address.slice('unix:'.length).replace(/^\/\//, ''))}`;
  return address.replace(/^(grpc|https?):\/\//, '');
}

export interface ExitMessage {
  code: number;
  has_code: boolean;
  signal: string;
}
