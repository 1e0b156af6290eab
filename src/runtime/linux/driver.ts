/**
 * The local Linux runtime: each box is a set of fresh namespaces (user, mount, PID, network, IPC, UTS,
 * cgroup) around an overlay root filesystem (snapshot layers over the Debian base image, a writable
 * layer per box), limited by cgroups, with a detached init (native/boxinit) that outlives the server.
 */
import { connect } from 'node:net';
import type { Duplex } from 'node:stream';
import { chmodSync, existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { rename, rm, stat } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import type { Readable } from 'node:stream';
import {
  isImageLayer,
  SandboxError,
  type BoxNetwork,
  type EgressRules,
  type PulledImage,
  type PullOptions,
  type RuntimeDriver,
  type Sandbox,
  type SandboxSpec,
} from '../driver.js';
import { pullImage } from '../oci/pull.js';
import { DOCKER_HUB } from '../oci/reference.js';
import { RegistryClient } from '../oci/registry.js';
import { OutboundGuard, parseOutboundAllow } from '../../platform/outbound/index.js';
import { ImageLayers, type LayerLimits } from './image-layers.js';
import { DEFAULT_IMPORT_LIMITS, type ImportLimits } from './layer-archive.js';
import { LayerTransfer } from './layer-transfer.js';
import { BoxLinkDaemon } from './boxlink.js';
import { BoxCgroup, detectLayout, prepareParents, type CgroupLayout } from './cgroups.js';
import { ExecDaemon, execdSocketDir } from './execd.js';
import { startInit } from './init-start.js';
import { attachLayer, detachDisk, isMountPoint, mountedLayers } from './disk.js';
import { DiskPool, slotOf } from './diskpool.js';
import { Egress, type BoxLink, type EgressConfig } from './egress.js';
import { diskUsage } from './fsutil.js';
import { limitDirty } from './iolimit.js';
import { BaseImage } from './image.js';
import { LivenessWatcher } from './liveness.js';
import type { RuntimeLogger } from './logger.js';
import { BOX_ID_BASE, DataPaths, isSafeId, native, sandboxesOf } from './paths.js';
import { isAlive, pidExists, procInfo } from './proc.js';
import { cleanHostname, seedResolver, seedUpper } from './rootfs.js';
import { IdRanges } from './idranges.js';
import { forkerSocket, LinuxSandbox, teardown, type BoxState } from './sandbox.js';

export interface LinuxDriverOptions {
  dataDir: string;
  /** Where the cached base image lives (shared by every data dir on the machine, if wanted). */
  imageDir: string;
  logger: RuntimeLogger;
  /** Run commands through the boxexecd daemon (default) rather than spawning boxexec per command. */
  execDaemon?: boolean;
  /** Executions one box runs at once; its forker refuses commands past this plus INTERNAL_COMMANDS. */
  maxCommandsPerBox?: number;
  /** Commands all boxes run at once (relays of the exec daemon); default MAX_COMMANDS. */
  maxCommands?: number;
  /** Where boxes claim their host id ranges (shared by every server on the host); tests may move it. */
  idRangeDir?: string;
  /** Gives every box a network link under these bounds (egress.ts); absent: boxes have only a loopback. */
  egress?: EgressConfig;
  /** Where `pullImage` looks for images. */
  registry?: RegistryConfig;
  /** Bounds of `importLayer` (default DEFAULT_IMPORT_LIMITS). */
  layerImport?: ImportLimits;
}

export interface RegistryConfig {
  /** Registry of references that name none (DEVBOXD_REGISTRY_DEFAULT); default Docker Hub. */
  defaultRegistry?: string;
  /** Registries (`host` or `host:port`) reached over plain http (DEVBOXD_REGISTRY_INSECURE). */
  insecure?: string[];
  /** Registries images may be pulled from (DEVBOXD_REGISTRY_ALLOW); empty or absent: any (see RegistryOptions.allow). */
  allow?: string[];
  limits?: LayerLimits;
  /** The outbound guard pulls pass; absent: one that opens nothing the rules refuse (no DEVBOXD_OUTBOUND_ALLOW). */
  outbound?: OutboundGuard;
  /** Connect and idle timeouts of registry requests. */
  connectTimeoutMs?: number;
  idleTimeoutMs?: number;
}

/** Room in a box's forker, past the executions the domain admits, for file transfers and launch steps. */
const INTERNAL_COMMANDS = 64;
/** Defaults of the caps on concurrent commands (see README). */
export const MAX_COMMANDS_PER_BOX = 256;
export const MAX_COMMANDS = 4096;

/** Numbers the exec daemons of the drivers in this process (tests make several). */
let driverSeq = 0;

export class LinuxDriver implements RuntimeDriver {
  get baseImageName(): string {
    return this.image.name;
  }

  private readonly paths: DataPaths;
  private readonly image: BaseImage;
  private readonly watcher = new LivenessWatcher();
  private readonly log: RuntimeLogger;
  private layoutCache: CgroupLayout | undefined;
  private prepared: Promise<void> | undefined;
  private readonly execd: ExecDaemon | undefined;
  /** Where boxexecd's socket lives (execdSocketDir). */
  private readonly socketDir: string;
  private readonly disks: DiskPool;
  /** Image layers being mounted, so concurrent creates on one layer mount it once. */
  private readonly mounting = new Map<string, Promise<string>>();
  private readonly ranges: IdRanges;
  private readonly maxPerBox: number;
  private readonly imageDir: string;
  /** The box-services link (boxlink.ts); public for tests, which look at the daemon's fds. */
  readonly boxLink: BoxLinkDaemon;
  private readonly egress: Egress | undefined;
  private readonly registry: RegistryClient;
  private readonly imageLayers: ImageLayers;
  private readonly transfer: LayerTransfer;
  private readonly defaultRegistry: string;

  constructor(opts: LinuxDriverOptions) {
    const reg = opts.registry ?? {};
    this.defaultRegistry = reg.defaultRegistry || DOCKER_HUB;
    this.registry = new RegistryClient({
      outbound: reg.outbound ?? new OutboundGuard({ allow: parseOutboundAllow('') }),
      insecure: reg.insecure ?? [],
      allow: reg.allow,
      defaultRegistry: this.defaultRegistry,
      connectTimeoutMs: reg.connectTimeoutMs,
      idleTimeoutMs: reg.idleTimeoutMs,
    });
    this.egress = opts.egress ? new Egress(opts.egress, opts.logger) : undefined;
    this.paths = new DataPaths(opts.dataDir);
    this.imageDir = opts.imageDir;
    this.log = opts.logger;
    this.ranges = new IdRanges(opts.idRangeDir);
    this.maxPerBox = opts.maxCommandsPerBox ?? MAX_COMMANDS_PER_BOX;
    this.image = new BaseImage(opts.imageDir, opts.logger);
    this.disks = new DiskPool(this.paths.pool, this.paths.disks, opts.logger);
    this.imageLayers = new ImageLayers(this.paths, opts.logger, reg.limits);
    this.transfer = new LayerTransfer(
      this.paths,
      opts.layerImport ?? DEFAULT_IMPORT_LIMITS,
      (id) => this.layerExists(id),
      (id) => this.lowerDir(id),
    );
    this.boxLink = new BoxLinkDaemon(opts.logger);
    this.socketDir = execdSocketDir(this.paths.run, opts.dataDir);
    const socket = join(this.socketDir, `execd-${process.pid}-${driverSeq++}.sock`);
    if (opts.execDaemon !== false) this.execd = new ExecDaemon(socket, opts.logger, opts.maxCommands ?? MAX_COMMANDS);
  }

  private get layout(): CgroupLayout {
    if (!this.layoutCache) {
      this.layoutCache = detectLayout();
      prepareParents(this.layoutCache);
    }
    return this.layoutCache;
  }

  prepare(): Promise<void> {
    this.prepared ??= (async () => {
      for (const bin of [native.boxinit, native.boxexec, native.boxlinkd, native.nftsetd, native.ociunpack, native.layertar]) {
        if (!existsSync(bin)) throw new SandboxError('failed', `${bin} is missing: run scripts/setup.sh`);
      }
      // Tenant data and the image's setuid binaries (owned by box ids) are for root only: other host users
      // can neither read a box's files nor run its binaries as a box uid.
      for (const dir of [this.paths.dataDir, this.imageDir, this.paths.boxes, this.paths.layers, this.paths.run, this.socketDir]) {
        mkdirSync(dir, { recursive: true, mode: 0o700 });
        chmodSync(dir, 0o700);
      }
      this.removeStaleSockets();
      // Half-made snapshots and half-deleted layers of an earlier run: never valid, removed in the background.
      // A suspend's moved disk is whole (it was unmounted first): it becomes its layer, so the box resumes.
      for (const name of readdirSync(this.paths.layers)) {
        if (name.startsWith('.tmp-') || name.startsWith('.del-') || name === '.stage')
          void rm(join(this.paths.layers, name), { recursive: true, force: true }).catch(() => undefined);
        else if (name.startsWith('.suspend-') && name.endsWith('.img'))
          renameSync(join(this.paths.layers, name), join(this.paths.layers, name.slice('.suspend-'.length)));
      }
      void this.layout;
      const linked = new Set(
        readdirSync(this.paths.boxes)
          .map((id) => slotOf(this.paths.boxDisk(id)))
          .filter((s): s is string => s !== null),
      );
      await this.disks.sweep(linked);
      if (this.execd) {
        await this.execd.start().catch((err: Error) => this.log.warn({ err: err.message }, 'boxexecd did not start; commands spawn boxexec'));
      }
      await this.boxLink.start();
      await this.egress?.prepare();
      await this.image.ensure();
    })().catch((err) => {
      this.prepared = undefined;
      throw err;
    });
    return this.prepared;
  }

  async create(spec: SandboxSpec): Promise<Sandbox> {
    await this.prepare();
    if (!isSafeId(spec.id)) throw new SandboxError('failed', `invalid sandbox id ${JSON.stringify(spec.id)}`);
    const lowers = await Promise.all(spec.layers.map((l) => this.lowerDir(l)));
    // An image pulled from a registry is a whole root filesystem: the base image does not show under it.
    if (!isImageLayer(spec.layers.at(-1) ?? '')) lowers.push(this.image.root);
    const joined = spec.joinNetworkOf !== undefined ? this.joinedBox(spec) : undefined;
    const boxDir = this.paths.box(spec.id);
    try {
      mkdirSync(boxDir, { mode: 0o700 });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') throw new SandboxError('failed', `sandbox ${spec.id} already exists`);
      throw err;
    }
    const cgroup = new BoxCgroup(this.layout, spec.id);
    let idBase: number | undefined;
    let net: BoxLink | undefined;
    try {
      idBase = this.ranges.claim(boxDir);
      // The id range's slot is unique host-wide: it names the box's addresses too.
      // A sidecar has no link of its own: it speaks through the box's.
      if (!joined) net = this.egress?.link(spec.id, (idBase - BOX_ID_BASE) / 65_536);
      const root = join(boxDir, 'root');
      mkdirSync(root);
      const disk = await this.disks.take(spec.limits.diskBytes);
      symlinkSync(relative(boxDir, disk.dir), this.paths.boxDisk(spec.id));
      const dev = disk.dev;
      const upper = join(disk.dir, 'upper');
      // The overlay names its layers by links in the box dir, relative to it: the box reads these names
      // in /proc/self/mountinfo, never a host path (the writable layer is reached through the disk link).
      mkdirSync(join(boxDir, 'lower'), { mode: 0o700 });
      lowers.forEach((dir, i) => symlinkSync(dir, join(boxDir, 'lower', String(i))));
      const lowerNames = lowers.map((_, i) => `lower/${i}`).join(':');
      const hostname = cleanHostname(spec.hostname);
      const user = seedUpper(upper, lowers, hostname, spec.user);
      const resolver = net?.hostAddress ?? joined?.net?.hostAddress;
      if (resolver) seedResolver(upper, resolver);
      cgroup.create(spec.limits);
      cgroup.limitDisk(dev);
      limitDirty(dev);
      // Layers keep canonical owners on disk; the box sees each layer and its disk (which holds the
      // writable layer) through an idmapped mount in its own id range.
      const idmapped = [...lowers, dirname(upper)].flatMap((d) => ['-m', d]);
      const pid = await startInit(this.execd, [
        '-r',
        root,
        '-d',
        boxDir,
        '-o',
        `lowerdir=${lowerNames},upperdir=disk/upper,workdir=disk/work`,
        '-n',
        hostname,
        '-i',
        String(idBase),
        ...idmapped,
        '-x',
        forkerSocket(this.paths, spec.id),
        '-N',
        String(this.maxPerBox + INTERNAL_COMMANDS),
        ...cgroup.procsFiles.flatMap((f) => ['-c', f]),
        ...cgroup.binds.flatMap((b) => ['-b', b]),
        ...(net ? ['-V', `${net.hostIf},${net.hostAddress},${net.boxAddress}`] : []),
        ...(joined ? ['-J', `${joined.pid}:${joined.startTime}`] : []),
      ]);
      const info = procInfo(pid);
      if (!info) throw new Error('the box init died at start');
      const state: BoxState = { pid, startTime: info.startTime, user, hostname, createdAt: new Date().toISOString(), idBase, net };
      const statePath = join(boxDir, 'state.json');
      writeFileSync(`${statePath}.tmp`, JSON.stringify(state), { mode: 0o600 });
      renameSync(`${statePath}.tmp`, statePath);
      if (spec.services) await this.boxLink.add(spec.id, { pid, startTime: info.startTime, ...spec.services });
      return new LinuxSandbox(spec.id, this.context(cgroup), state);
    } catch (err) {
      if (net) await this.egress?.release(spec.id, net);
      await teardown(this.paths, cgroup, idBase ? { pid: 0, startTime: 0, idBase } : null, this.ranges).catch(() => undefined);
      if (err instanceof SandboxError) throw err;
      throw new SandboxError('failed', `creating sandbox ${spec.id} failed: ${(err as Error).message}`);
    }
  }

  /** The running box a sidecar joins the network namespace of (SandboxSpec.joinNetworkOf). */
  private joinedBox(spec: SandboxSpec): BoxState {
    const of = spec.joinNetworkOf!;
    if (!isSafeId(of) || of.includes('--') || !spec.id.startsWith(`${of}--`)) {
      throw new SandboxError('failed', `sidecar ${spec.id} must be named ${of}--<name>`);
    }
    const state = this.readState(of);
    if (!state || !isAlive(state.pid, state.startTime)) throw new SandboxError('not_found', `sandbox ${of} is not running`);
    return state;
  }

  /** Removes the sidecars of sandbox `id` (whose ids are `<id>--*`). */
  private async removeSidecars(id: string): Promise<void> {
    let names: string[];
    try {
      names = readdirSync(this.paths.boxes);
    } catch {
      return;
    }
    for (const name of names) if (name.startsWith(`${id}--`) && isSafeId(name)) await this.remove(name);
  }

  /**
   * The directory a layer contributes to an overlay: the layer itself, or for an image layer (a suspended
   * box's disk) the writable layer inside its read-only mount.
   */
  private async lowerDir(id: string): Promise<string> {
    if (isSafeId(id) && existsSync(this.paths.layer(id))) return this.paths.layer(id);
    if (!isSafeId(id) || !existsSync(this.paths.layerImage(id))) throw new SandboxError('not_found', `layer ${id} does not exist`);
    const mnt = this.paths.layerMount(id);
    if (isMountPoint(mnt)) return join(mnt, 'upper');
    let p = this.mounting.get(id);
    if (!p) {
      p = (async () => {
        mkdirSync(mnt, { recursive: true, mode: 0o700 });
        await attachLayer(this.paths.layerImage(id), mnt);
        return join(mnt, 'upper');
      })().finally(() => this.mounting.delete(id));
      this.mounting.set(id, p);
    }
    return p;
  }

  async pullImage(ref: string, opts?: PullOptions): Promise<PulledImage> {
    await this.prepare();
    return pullImage(this.registry, this.imageLayers, this.defaultRegistry, ref, opts);
  }

  /** Unmounts the image layers once no box is left on this host (a box standing on one keeps them). */
  async close(): Promise<void> {
    this.boxLink.stop();
    await this.registry.close().catch(() => undefined);
    this.egress?.close();
    await this.disks.close();
    if ((await this.listSandboxes()).length > 0) return;
    for (const mnt of mountedLayers(join(this.paths.layers, '.mnt'))) await detachDisk(mnt).catch(() => undefined);
  }

  /** Sockets of exec daemons whose server is gone (the pid is in the name). */
  private removeStaleSockets(): void {
    for (const name of readdirSync(this.socketDir)) {
      const pid = Number(/^execd-(\d+)-\d+\.sock$/.exec(name)?.[1]);
      if (pid && !pidExists(pid)) rmSync(join(this.socketDir, name), { force: true });
    }
  }

  private context(cgroup: BoxCgroup) {
    return {
      paths: this.paths,
      cgroup,
      watcher: this.watcher,
      log: this.log,
      execd: this.execd,
      ranges: this.ranges,
      egress: this.egress,
      removeSidecars: (id: string) => this.removeSidecars(id),
    };
  }

  private readState(id: string): BoxState | null {
    try {
      return JSON.parse(readFileSync(join(this.paths.box(id), 'state.json'), 'utf8')) as BoxState;
    } catch {
      return null;
    }
  }

  async adopt(spec: SandboxSpec): Promise<Sandbox | null> {
    if (!isSafeId(spec.id)) return null;
    const state = this.readState(spec.id);
    if (!state || !isAlive(state.pid, state.startTime)) return null;
    const cgroup = new BoxCgroup(this.layout, spec.id);
    // A server killed mid-snapshot leaves the box frozen.
    try {
      cgroup.thaw();
    } catch {
      /* no freezer group */
    }
    return new LinuxSandbox(spec.id, this.context(cgroup), state);
  }

  async listSandboxes(): Promise<string[]> {
    let ids: string[];
    try {
      ids = readdirSync(this.paths.boxes);
    } catch {
      return [];
    }
    // Every box directory counts, whether its init runs, died (killed, or stopped by a suspend the server
    // did not live to finish) or was never recorded (the server died mid-create). Sidecars count as their box.
    return sandboxesOf(ids);
  }

  async linkServices(id: string, port: number, socketPath: string): Promise<void> {
    const state = isSafeId(id) ? this.readState(id) : null;
    if (!state || !isAlive(state.pid, state.startTime)) throw new SandboxError('not_found', `sandbox ${id} is not running`);
    await this.boxLink.add(id, { pid: state.pid, startTime: state.startTime, port, socketPath });
  }

  unlinkServices(id: string): Promise<void> {
    return this.boxLink.remove(id);
  }

  async network(id: string): Promise<BoxNetwork | null> {
    const net = isSafeId(id) ? this.readState(id)?.net : undefined;
    return net ? { boxAddress: net.boxAddress, hostAddress: net.hostAddress } : null;
  }

  async setEgress(id: string, rules: EgressRules): Promise<void> {
    const net = this.egress ? await this.network(id) : null;
    if (!this.egress || !net) return;
    // The box's DNS decides by the new rules before the kernel takes them: an answer pinned under the old
    // rules in between would outlive them (apply drops the pins made before it).
    this.egress.dns?.follow(id, rules);
    await this.egress.apply(id, rules, net.boxAddress);
    await this.egress.dns?.answer(id, net);
  }

  async pinEgress(id: string, addresses: string[], ttlSeconds: number): Promise<void> {
    await this.egress?.pin(id, addresses, ttlSeconds);
  }

  async openPort(id: string, port: number): Promise<Duplex> {
    const link = await this.network(id);
    if (!link) throw new SandboxError('not_found', `sandbox ${id} has no network link`);
    const socket = connect({ host: link.boxAddress, port });
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
    socket.setNoDelay(true);
    return socket;
  }

  async remove(id: string): Promise<void> {
    if (!isSafeId(id)) return;
    if (!id.includes('--')) await this.removeSidecars(id);
    this.watcher.unwatch(id);
    await this.boxLink.remove(id);
    const state = this.readState(id);
    if (state?.net) await this.egress?.release(id, state.net);
    await teardown(this.paths, new BoxCgroup(this.layout, id), state, this.ranges);
  }

  async layerExists(layerId: string): Promise<boolean> {
    return isSafeId(layerId) && (existsSync(this.paths.layer(layerId)) || existsSync(this.paths.layerImage(layerId)));
  }

  async deleteLayer(layerId: string): Promise<void> {
    if (!isSafeId(layerId)) return;
    if (existsSync(this.paths.layerImage(layerId))) {
      // No box stands on it any more: unmount, then remove the image.
      await detachDisk(this.paths.layerMount(layerId));
      await rm(this.paths.layerMount(layerId), { recursive: true, force: true });
      await rm(this.paths.layerImage(layerId), { force: true });
      return;
    }
    // Renamed first so the layer disappears at once and never half-deleted under its name.
    const doomed = join(this.paths.layers, `.del-${layerId}-${Date.now()}`);
    try {
      await rename(this.paths.layer(layerId), doomed);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw err;
    }
    await rm(doomed, { recursive: true, force: true });
  }

  async exportLayer(layerId: string): Promise<Readable> {
    await this.prepare();
    return this.transfer.export(layerId);
  }

  async importLayer(layerId: string, body: Readable): Promise<void> {
    await this.prepare();
    return this.transfer.import(layerId, body);
  }

  async layerSize(layerId: string): Promise<number> {
    if (!isSafeId(layerId)) throw new SandboxError('not_found', `layer ${layerId} does not exist`);
    // An image layer: the blocks its image holds (what the box wrote, plus ~300 KiB of filesystem).
    const img = await stat(this.paths.layerImage(layerId)).catch(() => null);
    if (img) return img.blocks * 512;
    try {
      await stat(this.paths.layer(layerId));
    } catch {
      throw new SandboxError('not_found', `layer ${layerId} does not exist`);
    }
    return diskUsage(this.paths.layer(layerId));
  }
}
