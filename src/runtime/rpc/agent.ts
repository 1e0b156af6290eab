/**
 * The node agent's server: a RuntimeDriver served over gRPC (node.proto) to API servers. It holds the only
 * handles of the node's sandboxes; a caller names them by id, and an id this agent holds no handle of (it
 * restarted) is answered `unknown_sandbox`, upon which the caller adopts it again with the spec it keeps.
 *
 * Every call must carry the cluster token. On one host the agent listens on a unix socket in a directory only
 * root and the API server's group enter; between hosts on TCP, with TLS (mutual when a CA is given).
 */
import { randomUUID } from 'node:crypto';
import * as grpc from '@grpc/grpc-js';
import type { DetachedProcess, EgressRules, RuntimeDriver, Sandbox, SandboxSpec, SpawnSpec } from '../driver.js';
import { serveCalls, type Unary } from './agent-calls.js';
import { serveOpenPort, serveSpawn } from './agent-streams.js';
import { hasToken, nodeService, PROTOCOL, toStatus, unknownSandbox } from './protocol.js';
import { serveExport, serveImport } from './agent-layers.js';
import { servePull } from './agent-pull.js';

export interface NodeAgentOptions {
  driver: RuntimeDriver;
  node: string;
  token: string;
  log: { warn(obj: object, msg: string): void };
}

export class NodeAgent {
  readonly server = new grpc.Server({ 'grpc.max_receive_message_length': 8 << 20 });
  private readonly sandboxes = new Map<string, Sandbox>();
  private readonly detached = new Map<string, DetachedProcess>();
  private readonly adopting = new Map<string, Promise<boolean>>();
  private prepared: Promise<void> | undefined;
  private readonly instance = randomUUID();

  constructor(private readonly opts: NodeAgentOptions) {
    const d = opts.driver;
    const unary: Record<string, Unary> = {
      Hello: () => ({ protocol: PROTOCOL, node: opts.node, base_image_name: d.baseImageName, instance: this.instance }),
      Prepare: async () => void (await this.prepare()),
      Create: async (r) => {
        const spec = JSON.parse(r.spec as string) as SandboxSpec;
        this.sandboxes.set(spec.id, await d.create(spec));
        return { network: JSON.stringify(await d.network(spec.id)), linked: spec.services !== undefined };
      },
      Adopt: async (r) => {
        const spec = JSON.parse(r.spec as string) as SandboxSpec;
        const found = await this.adopt(spec);
        return { found, network: found ? JSON.stringify(await d.network(spec.id)) : '' };
      },
      ListSandboxes: async () => ({ ids: await d.listSandboxes() }),
      Remove: async (r) => {
        const id = r.id as string;
        await d.remove(id);
        for (const key of this.sandboxes.keys()) if (key === id || key.startsWith(`${id}--`)) this.sandboxes.delete(key);
      },
      LayerExists: async (r) => ({ found: await d.layerExists(r.id as string) }),
      DeleteLayer: async (r) => void (await d.deleteLayer(r.id as string)),
      LayerSize: async (r) => ({ bytes: await d.layerSize(r.id as string) }),
      LinkServices: async (r) => void (await d.linkServices(r.id as string, r.port as number, r.socket_path as string)),
      UnlinkServices: async (r) => void (await d.unlinkServices(r.id as string)),
      Network: async (r) => ({ json: JSON.stringify(await d.network(r.id as string)) }),
      SetEgress: async (r) => void (await d.setEgress(r.id as string, JSON.parse(r.json as string) as EgressRules)),
      PinEgress: async (r) => void (await d.pinEgress(r.id as string, r.addresses as string[], r.ttl_seconds as number)),
      StartDetached: (r) => {
        const proc = this.sandbox(r.sandbox as string).startDetached(JSON.parse(r.spec as string) as SpawnSpec);
        const id = randomUUID();
        this.detached.set(id, proc);
        void proc.exited.finally(() => setTimeout(() => this.detached.delete(id), 60_000).unref());
        return { id };
      },
      WaitDetached: async (r) => {
        const proc = this.detached.get(r.id as string);
        if (!proc) throw unknownSandbox(`detached process ${r.id}`);
        const exit = await proc.exited;
        return { code: exit.exitCode ?? 0, has_code: exit.exitCode !== null, signal: exit.signal ?? '' };
      },
      DetachedLogTail: async (r) => {
        const proc = this.detached.get(r.id as string);
        if (!proc) throw unknownSandbox(`detached process ${r.id}`);
        return { text: await proc.logTail(r.max_bytes as number) };
      },
      HeldTerminals: async (r) => ({ ids: await this.sandbox(r.id as string).heldTerminals() }),
      Snapshot: async (r) => {
        const out = await this.sandbox(r.sandbox as string).snapshot(r.layer as string, { stop: r.stop as boolean });
        return { bytes: out.sizeBytes };
      },
      Stats: async (r) => ({ json: JSON.stringify(await this.sandbox(r.id as string).stats()) }),
      ListeningPorts: async (r) => ({ ports: [...(await this.sandbox(r.id as string).listeningPorts())] }),
      WaitDied: async (r) => void (await this.sandbox(r.id as string).died),
      Destroy: async (r) => {
        const id = r.id as string;
        const box = this.sandboxes.get(id);
        // Destroy is idempotent: a sandbox this agent never held (it restarted) is removed by id.
        if (box) await box.destroy();
        else await d.remove(id);
        this.sandboxes.delete(id);
      },
    };
    const handlers: grpc.UntypedServiceImplementation = {};
    for (const [name, fn] of Object.entries(unary)) {
      handlers[name] = (call: grpc.ServerUnaryCall<Record<string, unknown>, unknown>, done: grpc.sendUnaryData<unknown>) => {
        if (!hasToken(call.metadata, opts.token)) return done({ code: grpc.status.UNAUTHENTICATED, details: 'a cluster token is required' });
        Promise.resolve()
          .then(() => fn(call.request))
          .then(
            (out) => done(null, out ?? {}),
            (err) => done(toStatus(err)),
          );
      };
    }
    const streams: Record<string, (call: grpc.ServerDuplexStream<Record<string, unknown>, unknown>) => void> = {
      Spawn: (call) => serveSpawn(call, (id) => this.sandbox(id), opts.log),
      PullImage: (call) => servePull(call, d),
      OpenPort: (call) => serveOpenPort(call, d),
      Calls: (call) => serveCalls(call as never, nodeService(), unary),
    };
    handlers.ExportLayer = (call: grpc.ServerWritableStream<{ id: string }, unknown>) => {
      if (!hasToken(call.metadata, opts.token)) return call.emit('error', { code: grpc.status.UNAUTHENTICATED, details: 'a cluster token is required' });
      serveExport(call, d);
    };
    handlers.ImportLayer = (call: grpc.ServerReadableStream<Record<string, unknown>, unknown>, done: grpc.sendUnaryData<unknown>) => {
      if (!hasToken(call.metadata, opts.token)) return done({ code: grpc.status.UNAUTHENTICATED, details: 'a cluster token is required' });
      serveImport(call, d).then(
        () => done(null, {}),
        (err) => done(toStatus(err)),
      );
    };
    for (const [name, fn] of Object.entries(streams)) {
      handlers[name] = (call: grpc.ServerDuplexStream<Record<string, unknown>, unknown>) => {
        // An error emitted (not a destroy, which sends no status) ends the call with its status.
        if (!hasToken(call.metadata, opts.token)) return call.emit('error', { code: grpc.status.UNAUTHENTICATED, details: 'a cluster token is required' });
        fn(call);
      };
    }
    this.server.addService(nodeService(), handlers);
  }

  /**
   * The driver's preparation (base image, disk templates, tables), once: the agent starts it as it starts,
   * while the API server is still loading, and the API server's Prepare joins it. A failure is tried again by
   * the next caller.
   */
  prepare(): Promise<void> {
    this.prepared ??= this.opts.driver.prepare().catch((err: unknown) => {
      this.prepared = undefined;
      throw err;
    });
    return this.prepared;
  }

  /** Binds `unix:/path` or `host:port`; returns the port bound (0 for a socket). */
  listen(target: string, credentials = grpc.ServerCredentials.createInsecure()): Promise<number> {
    return new Promise((resolve, reject) => this.server.bindAsync(target, credentials, (err, port) => (err ? reject(err) : resolve(port))));
  }

  private sandbox(id: string): Sandbox {
    const box = this.sandboxes.get(id);
    if (!box) throw unknownSandbox(id);
    return box;
  }

  /** Two callers adopting one sandbox at once share one adoption: one handle, one watcher of its init. */
  private adopt(spec: SandboxSpec): Promise<boolean> {
    if (this.sandboxes.has(spec.id)) return Promise.resolve(true);
    let pending = this.adopting.get(spec.id);
    if (!pending) {
      pending = this.opts.driver
        .adopt(spec)
        .then((box) => {
          if (box) this.sandboxes.set(spec.id, box);
          return box !== null;
        })
        .finally(() => this.adopting.delete(spec.id));
      this.adopting.set(spec.id, pending);
    }
    return pending;
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => this.server.tryShutdown(() => resolve()));
  }

  /** Ends every call at once (the process is going away). */
  forceClose(): void {
    this.server.forceShutdown();
  }
}
