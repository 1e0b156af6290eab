import { type Duplex, PassThrough, Readable } from 'node:stream';
import {
  SandboxError,
  type BoxNetwork,
  type BoxProcess,
  type EgressRules,
  type ProcessExit,
  type PulledImage,
  type PullOptions,
  type RuntimeDriver,
  type Sandbox,
  type SandboxSpec,
  type SandboxStats,
  type SpawnSpec,
} from '../../src/runtime/driver.js';

/** What a stubbed process does: its output and exit code (default: nothing, exit 0). */
export interface StubRun {
  stdout?: string;
  stderr?: string;
  exitCode?: number;
  /** The process runs until it is signalled or closed (then it exits killed by the signal). */
  hang?: boolean;
  /** With `hang`: written to stdout at once, while the process runs (`stdout` comes as it exits). */
  liveStdout?: string;
  /** With `hang`: the process also exits (status 0) once this settles. */
  until?: Promise<unknown>;
  /** Exits this many ms later (unless signalled first). */
  delayMs?: number;
}

/**
 * A runtime driver for the fast test tier only (never shipped): sandboxes are records, every process exits
 * at once with what `run` says, snapshots are names in a set. It lets `buildApp()` + `inject()` tests create
 * devboxes, executions and snapshots without root or a real sandbox.
 */
export class StubRuntime implements RuntimeDriver {
  /** Writable: a test changes it as an upgraded base image would. */
  baseImageName = 'stub-base';
  readonly boxes = new Map<string, Sandbox>();
  readonly layers = new Set<string>();
  /** Decides what each spawned process does. */
  run: (spec: SpawnSpec) => StubRun = () => ({});
  /** Snapshots finish once this settles (tests hold one in progress with it). */
  snapshotGate: Promise<void> = Promise.resolve();

  async prepare(): Promise<void> {}

  async create(spec: SandboxSpec): Promise<Sandbox> {
    const box = this.sandbox(spec.id);
    this.boxes.set(spec.id, box);
    if (spec.services) this.links.set(spec.id, spec.services.socketPath);
    return box;
  }

  async adopt(spec: SandboxSpec): Promise<Sandbox | null> {
    return this.boxes.get(spec.id) ?? null;
  }

  async listSandboxes(): Promise<string[]> {
    return [...this.boxes.keys()];
  }

  async remove(id: string): Promise<void> {
    this.boxes.delete(id);
  }

  /** Sandboxes whose services port is linked, and the socket each reaches. */
  readonly links = new Map<string, string>();

  async linkServices(id: string, _port: number, socketPath: string): Promise<void> {
    this.links.set(id, socketPath);
  }

  async unlinkServices(id: string): Promise<void> {
    this.links.delete(id);
  }

  /** The egress rules each sandbox was given last (stub boxes have no network link). */
  readonly egress = new Map<string, EgressRules>();

  async network(): Promise<BoxNetwork | null> {
    return null;
  }

  async setEgress(id: string, rules: EgressRules): Promise<void> {
    this.egress.set(id, rules);
  }

  async pinEgress(): Promise<void> {}

  async openPort(id: string): Promise<Duplex> {
    throw new SandboxError('not_found', `sandbox ${id} has no network link`);
  }

  async layerExists(layerId: string): Promise<boolean> {
    return this.layers.has(layerId);
  }

  async deleteLayer(layerId: string): Promise<void> {
    this.layers.delete(layerId);
  }

  async layerSize(): Promise<number> {
    return 4096;
  }

  /** A stub layer's archive is its id: what `importLayer` checks it got. */
  async exportLayer(layerId: string): Promise<Readable> {
    if (!this.layers.has(layerId)) throw new SandboxError('not_found', `layer ${layerId} does not exist`);
    return Readable.from([Buffer.from(`stub-layer:${layerId}`)]);
  }

  async importLayer(layerId: string, body: Readable): Promise<void> {
    const parts: Buffer[] = [];
    for await (const chunk of body) parts.push(chunk as Buffer);
    if (Buffer.concat(parts).toString() !== `stub-layer:${layerId}`) throw new SandboxError('failed', `layer ${layerId}: not its archive`);
    this.layers.add(layerId);
  }

  /** Images `pullImage` finds, by reference; any other reference is not found. */
  readonly images = new Map<string, PulledImage>();

  /** The credentials of each pull, in order (tests check what a pull was given). */
  readonly pulls: { ref: string; auth?: PullOptions['auth'] }[] = [];

  async pullImage(ref: string, opts?: PullOptions): Promise<PulledImage> {
    this.pulls.push({ ref, auth: opts?.auth });
    const image = this.images.get(ref);
    if (!image) throw new SandboxError('not_found', `image ${ref} not found`);
    for (const layer of image.layers) {
      this.layers.add(layer);
      await opts?.onLayer?.(layer);
    }
    return image;
  }

  private sandbox(id: string): Sandbox {
    const stub = this;
    return {
      id,
      spawn: (spec) => stub.process(spec),
      async snapshot(layerId) {
        await stub.snapshotGate;
        stub.layers.add(layerId);
        return { sizeBytes: 4096 };
      },
      async stats(): Promise<SandboxStats> {
        return { memoryBytes: 0, memoryLimitBytes: 0, cpuMicros: 0, oomKills: 0, diskBytes: 0, pids: 1 };
      },
      startDetached(spec: SpawnSpec) {
        // Exits as a spawned process would (at once, later with `delayMs`, never with `hang`).
        const r = stub.run(spec);
        return { exited: stub.process(spec).exited, logTail: async () => `${r.stdout ?? ''}${r.stderr ?? ''}` };
      },
      async listeningPorts() {
        return new Set<number>();
      },
      reattach: async () => null,
      heldTerminals: async () => [],
      died: new Promise<void>(() => undefined),
      async destroy() {
        stub.boxes.delete(id);
      },
    };
  }

  private process(spec: SpawnSpec): BoxProcess {
    const { stdout = '', stderr = '', exitCode = 0, hang = false, liveStdout, until, delayMs = 0 } = this.run(spec);
    const out = new PassThrough();
    const err = new PassThrough();
    const stdin = new PassThrough();
    stdin.resume();
    let exit!: (e: ProcessExit) => void;
    const exited = new Promise<ProcessExit>((r) => (exit = r));
    let ended = false;
    const end = (e: ProcessExit) => {
      if (ended) return;
      ended = true;
      out.end(stdout);
      err.end(stderr);
      exit(e);
    };
    if (hang) {
      // Takes no input either, as a stalled process: its writer waits on back-pressure.
      stdin.pause();
      if (liveStdout) out.write(liveStdout);
      void until?.finally(() => end({ exitCode: 0, signal: null }));
      return {
        stdin,
        stdout: out,
        stderr: err,
        exited,
        signal: (sig) => end({ exitCode: null, signal: sig }),
        resize: () => undefined,
        close: () => end({ exitCode: null, signal: 'SIGHUP' }),
      };
    }
    (delayMs ? (fn: () => void) => setTimeout(fn, delayMs) : setImmediate)(() => end({ exitCode, signal: null }));
    const signal = (name: NodeJS.Signals) => void (delayMs > 0 && end({ exitCode: null, signal: name }));
    return { stdin, stdout: out, stderr: err, exited, signal, resize: () => undefined, close: () => undefined };
  }
}
