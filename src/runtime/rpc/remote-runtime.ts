/**
 * The runtime driver of an API server whose sandboxes run on a node agent: every method is a call of the
 * agent's RPC (node.proto), so the domain above cannot tell it from the driver in process.
 */
import { Duplex, Readable } from 'node:stream';
import type { BoxNetwork, EgressRules, PulledImage, PullOptions, RuntimeDriver, Sandbox, SandboxSpec } from '../driver.js';
import { Channel, type ChannelOptions, type Message } from './channel.js';
import { PROTOCOL, fromStatus } from './protocol.js';
import { RemoteSandbox } from './remote-sandbox.js';

export interface RemoteRuntimeOptions extends ChannelOptions {
  /** How long to wait for the agent at start (it may be starting beside this server). */
  readyTimeoutMs?: number;
}

export class RemoteRuntime implements RuntimeDriver {
  /**
   * The network of each sandbox this server made or adopted, as the agent answered then: it stays the same
   * for the sandbox's life, and asking again cost a round trip at every boot.
   */
  private readonly nets = new Map<string, BoxNetwork | null>();

  private constructor(
    private readonly channel: Channel,
    readonly baseImageName: string,
    /** The agent's node name. */
    readonly node: string,
  ) {}

  /** Connects and checks that the agent speaks this protocol. */
  static async connect(opts: RemoteRuntimeOptions): Promise<RemoteRuntime> {
    const channel = new Channel(opts);
    try {
      await channel.ready(opts.readyTimeoutMs ?? 30_000);
      const hello = await channel.call<{ protocol: string; node: string; base_image_name: string }>('Hello');
      if (hello.protocol !== PROTOCOL) throw new Error(`the node agent at ${opts.address} speaks ${hello.protocol}, this server ${PROTOCOL}`);
      return new RemoteRuntime(channel, hello.base_image_name, hello.node);
    } catch (err) {
      channel.close();
      throw err;
    }
  }

  private readonly readopt = async (spec: SandboxSpec): Promise<boolean> => {
    const r = await this.channel.call<{ found: boolean; network: string }>('Adopt', { spec: JSON.stringify(spec) });
    this.remember(spec.id, r.found ? r.network : '');
    return r.found;
  };

  /** An agent of an older protocol revision answers no network (''): then it is asked for when needed. */
  private remember(id: string, network: string): void {
    if (network) this.nets.set(id, JSON.parse(network) as BoxNetwork | null);
    else this.nets.delete(id);
  }

  private readonly boxes = { readopt: this.readopt, forget: (id: string) => this.nets.delete(id) };

  async prepare(): Promise<void> {
    await this.channel.call('Prepare');
  }

  async create(spec: SandboxSpec): Promise<Sandbox> {
    const r = await this.channel.call<{ network: string; linked: boolean }>('Create', { spec: JSON.stringify(spec) });
    this.remember(spec.id, r.network);
    if (spec.services && !r.linked) await this.linkServices(spec.id, spec.services.port, spec.services.socketPath);
    return new RemoteSandbox(this.channel, spec, this.boxes);
  }

  async adopt(spec: SandboxSpec): Promise<Sandbox | null> {
    return (await this.readopt(spec)) ? new RemoteSandbox(this.channel, spec, this.boxes) : null;
  }

  async listSandboxes(): Promise<string[]> {
    return (await this.channel.call<{ ids: string[] }>('ListSandboxes')).ids;
  }

  async remove(id: string): Promise<void> {
    for (const key of this.nets.keys()) if (key === id || key.startsWith(`${id}--`)) this.nets.delete(key);
    await this.channel.call('Remove', { id });
  }

  async layerExists(layerId: string): Promise<boolean> {
    return (await this.channel.call<{ found: boolean }>('LayerExists', { id: layerId })).found;
  }

  async deleteLayer(layerId: string): Promise<void> {
    await this.channel.call('DeleteLayer', { id: layerId });
  }

  async layerSize(layerId: string): Promise<number> {
    return (await this.channel.call<{ bytes: number }>('LayerSize', { id: layerId })).bytes;
  }

  pullImage(ref: string, opts: PullOptions = {}): Promise<PulledImage> {
    const call = this.channel.stream('PullImage');
    const onAbort = () => call.cancel();
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    call.write({ start: { ref, auth: opts.auth ? JSON.stringify(opts.auth) : '' } });
    return new Promise<PulledImage>((resolve, reject) => {
      // Layers are recorded one at a time and in order, as the agent waits for each.
      let recording = Promise.resolve();
      call.on('data', (msg: Message) => {
        if (msg.kind === 'progress') opts.onProgress?.(msg.progress as string);
        else if (msg.kind === 'layer')
          recording = recording
            .then(() => opts.onLayer?.(msg.layer as string))
            .then(
              () => void call.write({ layer_recorded: {} }),
              (err) => {
                call.cancel();
                reject(err);
              },
            );
        else if (msg.kind === 'image') void recording.then(() => resolve(JSON.parse(msg.image as string) as PulledImage));
      });
      call.on('error', (err) => reject(opts.signal?.aborted ? (opts.signal.reason ?? err) : fromStatus(err as never)));
    }).finally(() => {
      opts.signal?.removeEventListener('abort', onAbort);
      call.end();
    });
  }

  async linkServices(id: string, port: number, socketPath: string): Promise<void> {
    await this.channel.call('LinkServices', { id, port, socket_path: socketPath });
  }

  async unlinkServices(id: string): Promise<void> {
    await this.channel.call('UnlinkServices', { id });
  }

  async network(id: string): Promise<BoxNetwork | null> {
    const known = this.nets.get(id);
    if (known !== undefined) return known;
    return JSON.parse((await this.channel.call<{ json: string }>('Network', { id })).json) as BoxNetwork | null;
  }

  async setEgress(id: string, rules: EgressRules): Promise<void> {
    await this.channel.call('SetEgress', { id, json: JSON.stringify(rules) });
  }

  async pinEgress(id: string, addresses: string[], ttlSeconds: number): Promise<void> {
    await this.channel.call('PinEgress', { id, addresses, ttl_seconds: ttlSeconds });
  }

  openPort(id: string, port: number): Promise<Duplex> {
    const call = this.channel.stream('OpenPort');
    call.write({ open: { sandbox: id, port } });
    const socket = new Duplex({
      read: () => void call.resume(),
      write: (chunk: Buffer, _enc, cb) => (call.write({ data: chunk }) ? cb() : call.once('drain', () => cb())),
      final: (cb) => {
        call.end();
        cb();
      },
      destroy: (err, cb) => {
        call.cancel();
        cb(err);
      },
    });
    // The agent answers an empty message once connected; a refused connection is an error instead.
    return readInto(call, socket);
  }

  /** Resolves once the agent found the layer (its first, empty, message), so a missing one rejects here. */
  exportLayer(layerId: string): Promise<Readable> {
    const call = this.channel.serverStream('ExportLayer', { id: layerId });
    return readInto(call, new Readable({ read: () => void call.resume() }));
  }

  importLayer(layerId: string, body: Readable): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      // A body that fails (its check against the recorded digest, a broken download) is the reason the import
      // failed, not the cancelled call it leads to.
      let failed: Error | undefined;
      const call = this.channel.clientStream('ImportLayer', (err) => (failed || err ? reject(failed ?? err) : resolve()));
      call.write({ layer: layerId });
      body.on('data', (chunk: Buffer) => {
        if (!call.write({ data: chunk })) {
          body.pause();
          call.once('drain', () => body.resume());
        }
      });
      body.once('end', () => call.end());
      // The agent leaves nothing under the id of an import cut short.
      body.once('error', (err) => {
        failed = err;
        call.cancel();
      });
    });
  }

  async close(): Promise<void> {
    this.channel.close();
  }
}

/**
 * Pushes the bytes of `call`'s messages into `out`, pausing the call while `out` is full. Resolves with `out` at
 * the first message (the agent's empty one that says it is ready); a call that fails before it rejects, one
 * that fails after destroys `out` with the agent's error.
 */
function readInto<T extends Readable>(call: Readable, out: T): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let ready = false;
    call.on('data', (msg: Message) => {
      const data = msg.data as Buffer;
      if (!ready) {
        ready = true;
        resolve(out);
      }
      if (data.length && !out.push(data)) call.pause();
    });
    call.on('end', () => out.push(null));
    call.on('error', (err) => {
      const e = fromStatus(err as never);
      if (!ready) reject(e);
      else out.destroy(e);
    });
  });
}
