/**
 * A sandbox on a node agent, as the API server sees it. It keeps the spec it was made or adopted with: an
 * agent that restarted holds no handle of it (`unknown_sandbox`), and the call that learns so adopts it again
 * and is tried once more.
 */
import {
  type BoxProcess,
  type DetachedProcess,
  type HeldTerminal,
  type ProcessExit,
  type Sandbox,
  SandboxError,
  type SandboxSpec,
  type SandboxStats,
  type SpawnSpec,
} from '../driver.js';
import type { Channel, Message } from './channel.js';
import { isUnavailable, isUnknownSandbox } from './protocol.js';
import { RemoteProcess } from './remote-process.js';

const RETRY_MS = 1_000;

export class RemoteSandbox implements Sandbox {
  private diedWatch?: Promise<void>;
  /** Ends the WaitDied call when the sandbox is destroyed. */
  private readonly destroying = new AbortController();
  private destroyed = false;

  constructor(
    private readonly channel: Channel,
    readonly spec: SandboxSpec,
    private readonly boxes: {
      /** Adopts the sandbox again on its agent: false when it is gone. */
      readopt(spec: SandboxSpec): Promise<boolean>;
      /** Drops what the runtime keeps of the sandbox (it is destroyed). */
      forget(id: string): void;
    },
  ) {}

  get id(): string {
    return this.spec.id;
  }

  private async call<T = Message>(method: string, request: object): Promise<T> {
    try {
      return await this.channel.call<T>(method, request);
    } catch (err) {
      if (!isUnknownSandbox(err)) throw err;
      if (!(await this.boxes.readopt(this.spec))) throw new SandboxError('not_found', `sandbox ${this.id} is gone`);
      return this.channel.call<T>(method, request);
    }
  }

  spawn(spec: SpawnSpec): BoxProcess {
    this.check(spec);
    const call = this.channel.stream('Spawn');
    // The write's callback comes once HTTP/2 holds the message; the session writes it to the socket in the
    // event loop's check phase, before an immediate queued after that callback runs.
    const sent = new Promise<void>((resolve) => call.write({ start: { sandbox: this.id, spec: JSON.stringify(spec) } }, () => setImmediate(resolve)));
    return new RemoteProcess(call, { held: !!(spec.tty && spec.hold), onLost: (err) => this.lost(err), sent });
  }

  /** What the driver refuses at once in process, refused at once here too (not as a failed process later). */
  private check(spec: SpawnSpec): void {
    if (this.destroyed) throw new SandboxError('not_found', `sandbox ${this.id} is destroyed`);
    const texts = [...spec.argv, ...Object.entries(spec.env ?? {}).flat(), spec.cwd ?? ''];
    if (texts.some((t) => t.includes('\0'))) throw new TypeError('arguments and environment must not contain NUL bytes');
  }

  /** A process call learned the agent lost the sandbox's handle: adopted again for the next call. */
  private lost(err: Error): void {
    if (isUnknownSandbox(err)) void this.boxes.readopt(this.spec).catch(() => undefined);
  }

  startDetached(spec: SpawnSpec): DetachedProcess {
    this.check(spec);
    const started = this.call<{ id: string }>('StartDetached', { sandbox: this.id, spec: JSON.stringify(spec) }).then((r) => r.id);
    const exited = started.then(
      (id) => this.waitDetached(id),
      (): ProcessExit => ({ exitCode: 127, signal: null }),
    );
    return {
      exited,
      logTail: async (maxBytes) => {
        const id = await started.catch((err: Error) => err);
        if (id instanceof Error) return `devboxd: ${id.message}`;
        // An agent that restarted forgot the process (it keeps running, its log on the box's disk).
        return this.channel.call<{ text: string }>('DetachedLogTail', { id, max_bytes: maxBytes }).then(
          (r) => r.text,
          () => '',
        );
      },
    };
  }

  private async waitDetached(id: string): Promise<ProcessExit> {
    for (;;) {
      try {
        const e = await this.channel.call<{ code: number; has_code: boolean; signal: string }>('WaitDetached', { id });
        return { exitCode: e.has_code ? e.code : null, signal: (e.signal || null) as NodeJS.Signals | null };
      } catch (err) {
        // As in process: a restarted agent does not see it end.
        if (!isUnavailable(err)) return new Promise<never>(() => undefined);
        await sleep(RETRY_MS);
      }
    }
  }

  async reattach(key: string): Promise<HeldTerminal | null> {
    if (this.destroyed) return null;
    const call = this.channel.stream('Spawn');
    call.write({ reattach: { sandbox: this.id, key } });
    const first = await new Promise<Message>((resolve, reject) => {
      call.once('data', resolve);
      call.once('error', reject);
    }).catch(async (err) => {
      if (!isUnknownSandbox(err) || !(await this.boxes.readopt(this.spec))) throw err;
      return null;
    });
    if (first === null) return this.reattach(key);
    const a = first.attached as { found: boolean; cols: number; rows: number };
    if (!a.found) return null;
    return { proc: new RemoteProcess(call, { held: true, onLost: (err) => this.lost(err) }), cols: a.cols, rows: a.rows };
  }

  async heldTerminals(): Promise<string[]> {
    return (await this.call<{ ids: string[] }>('HeldTerminals', { id: this.id })).ids;
  }

  async snapshot(layerId: string, opts: { stop?: boolean } = {}): Promise<{ sizeBytes: number }> {
    const r = await this.call<{ bytes: number }>('Snapshot', { sandbox: this.id, layer: layerId, stop: opts.stop ?? false });
    return { sizeBytes: r.bytes };
  }

  async stats(): Promise<SandboxStats> {
    return JSON.parse((await this.call<{ json: string }>('Stats', { id: this.id })).json) as SandboxStats;
  }

  async listeningPorts(): Promise<Set<number>> {
    return new Set((await this.call<{ ports: number[] }>('ListeningPorts', { id: this.id })).ports);
  }

  /** Watched only once asked for (a sandbox nobody watches holds no call open on the agent). */
  get died(): Promise<void> {
    this.diedWatch ??= this.watchDied();
    return this.diedWatch;
  }

  private async watchDied(): Promise<void> {
    while (!this.destroyed) {
      try {
        await this.channel.call('WaitDied', { id: this.id }, { signal: this.destroying.signal });
        return;
      } catch (err) {
        if (this.destroyed) break;
        // Gone from an agent that restarted: adopted again, or (not found) dead. Anything else is tried again.
        const found = isUnknownSandbox(err) ? await this.boxes.readopt(this.spec).catch(() => undefined) : undefined;
        if (found === false) return;
        if (found === undefined) await sleep(RETRY_MS);
      }
    }
    // Destroyed: `died` is for deaths outside of destroy, so it never settles.
    return new Promise<never>(() => undefined);
  }

  async destroy(): Promise<void> {
    this.destroyed = true;
    this.boxes.forget(this.id);
    this.destroying.abort();
    await this.channel.call('Destroy', { id: this.id });
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
