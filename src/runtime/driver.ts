/**
 * The runtime driver: the one seam between devboxd's domain and whatever runs sandboxes.
 * The local Linux driver (`linux/`) is the shipped implementation; a Kubernetes driver fits the same shape
 * later (one Pod per sandbox, `spawn` through the exec API, layers as volume snapshots).
 */
import type { Duplex, Readable, Writable } from 'node:stream';

export interface ResourceLimits {
  /** CPU bandwidth in cores (0.5 = half a core). */
  cpuCores: number;
  memoryBytes: number;
  /** Size of the box's disk (its writable layer): writes past it fail with ENOSPC inside the box. */
  diskBytes: number;
  /** Maximum number of tasks (processes + threads) in the box. */
  pids: number;
}

export interface SandboxUser {
  name: string;
  uid: number;
}

export interface SandboxSpec {
  /** Devbox id; also names the sandbox on the host (cgroup, state directory). */
  id: string;
  hostname: string;
  /**
   * Layers under the writable layer, newest first. The base image lies under all of them, unless the last
   * (lowest) one is an image layer pulled from a registry (`isImageLayer`): the image's own layers are then
   * the whole root filesystem.
   */
  layers: string[];
  limits: ResourceLimits;
  /**
   * A uid below 0 names a user of the image's /etc/passwd, whose uid is looked up there; an empty name takes
   * the image's name for the uid (the image's USER, by name or by uid).
   */
  user: SandboxUser;
  /**
   * Id of a running sandbox whose network namespace this one shares (a service sidecar: each reaches the
   * other on localhost); every other namespace is its own. The id is `<that id>--<suffix>`: the sidecar goes
   * with that sandbox in `remove`, and `listSandboxes` lists it as that sandbox (even once that one's own
   * traces are gone). It gets no network link of its own: what it reaches is what the other sandbox's egress
   * rules allow.
   */
  joinNetworkOf?: string;
  /**
   * The box-services link the sandbox starts with, as `linkServices(id, port, socketPath)` would make it
   * after: a boot then spends no call of its own on it (one round trip to a node agent fewer).
   */
  services?: { port: number; socketPath: string };
}

/** The id of a sidecar of sandbox `id` (see SandboxSpec.joinNetworkOf). */
export function sidecarId(id: string, suffix: string): string {
  return `${id}--${suffix}`;
}

export interface SpawnSpec {
  /** argv[0] is looked up on the box's PATH. */
  argv: string[];
  /** Working directory inside the box; defaults to the user's home. */
  cwd?: string;
  /** Added to the box's default environment (HOME, USER, PATH, LANG, SHELL, TERM). */
  env?: Record<string, string>;
  /** Run as the box's root instead of the box user (uid 0 inside the box's user namespace). */
  asRoot?: boolean;
  /**
   * Run the command on a pseudo-terminal of the box (a /dev/pts/N of its own devpts, the command's
   * controlling terminal) of this size: stdin is typed into it, stdout is what it shows, stderr stays empty.
   */
  tty?: { cols: number; rows: number };
  /**
   * With `tty`: the terminal is held on the host by the command's relay, under `key` (letters, digits, `-`
   * and `_`; unique within the sandbox), so the command outlives this server: when the server goes away
   * (a restart) the command keeps running, its output waiting in the terminal, for `ms` at most; then it is
   * hung up. `Sandbox.reattach(key)` connects to it again. A server that closes the process ends it as
   * without a hold.
   */
  hold?: { key: string; ms: number };
}

/** A held terminal connected again (`Sandbox.reattach`): its command, and the terminal's size. */
export interface HeldTerminal {
  proc: BoxProcess;
  cols: number;
  rows: number;
}

/** A port or range of one rule of `EgressRules.cidrs`; no protocol means TCP and UDP. */
export interface EgressPort {
  port: number;
  endPort?: number;
  protocol?: 'TCP' | 'UDP';
}

/**
 * What a box may reach beyond its loopback, and which names its DNS answers (its network policy, resolved;
 * plain data). Whatever it is, the host, other boxes and the never-reachable addresses stay out of reach.
 * The box's resolver (/etc/resolv.conf) names its link's host end, where the driver answers it by these rules.
 */
export interface EgressRules {
  /**
   * Every public address (the parts of private ranges the operator opened still need a CIDR of their own);
   * its DNS asks upstream for every name and pins nothing.
   */
  allowAll: boolean;
  /** Canonical IPv4 CIDRs; no ports means every port and protocol. */
  cidrs: { cidr: string; ports: EgressPort[] }[];
  /**
   * Without allowAll, the names its DNS answers: exact names, or `*.` then a name for every name under it
   * (lower case). Such a name is asked upstream and the addresses of the answer are pinned for the box
   * (`pinEgress`) before it sees them; any other name is NXDOMAIN, never asked upstream.
   */
  hostnames: string[];
}

/** A box's end and the host's end of its network link. */
export interface BoxNetwork {
  boxAddress: string;
  /** Where the box's resolver (/etc/resolv.conf) and default route point. */
  hostAddress: string;
}

export interface ProcessExit {
  /** Exit code, or null when a signal ended the process. */
  exitCode: number | null;
  signal: NodeJS.Signals | null;
}

/** A process running inside a sandbox. Its stdio are plain pipes with back-pressure. */
export interface BoxProcess {
  readonly stdin: Writable;
  readonly stdout: Readable;
  readonly stderr: Readable;
  readonly exited: Promise<ProcessExit>;
  /**
   * Settles once the start is on its way to the sandbox: for a process on a node agent, once its start message
   * is written to the connection (absent: it is at once). Work that would hold up this process's event loop
   * (a synchronous database write) waits for it, so that it overlaps the command instead of delaying its start.
   */
  readonly sent?: Promise<void>;
  /**
   * Signals the process, or its whole process group (the command and everything it started), or with
   * 'foreground' the foreground process group of its terminal (what ^C reaches; nothing without a tty or
   * once the command ended).
   */
  signal(sig: NodeJS.Signals, group: boolean | 'foreground'): void;
  /** Sets the terminal's size (the kernel sends SIGWINCH to its foreground group); a no-op without `tty`. */
  resize(cols: number, rows: number): void;
  /**
   * Ends the process's connection at once: its output and input go nowhere from then on. With `tty` the
   * terminal's master is closed, so the kernel hangs the terminal up for whatever still holds it (a process
   * that left the command's session), and nothing keeps running on the host for it.
   */
  close(): void;
  /**
   * A held terminal (SpawnSpec.hold) is held no more: no later `Sandbox.reattach` finds it, and the server
   * going away ends it as any process. Absent: the process holds nothing.
   */
  release?(): void;
}

/** A process started by `Sandbox.startDetached`. */
export interface DetachedProcess {
  /** Resolves when the process ends (while this server runs; a restarted server does not see it end). */
  readonly exited: Promise<ProcessExit>;
  /** The last bytes (at most `maxBytes`) of what it wrote, as text. */
  logTail(maxBytes: number): Promise<string>;
}

export interface SandboxStats {
  memoryBytes: number;
  memoryLimitBytes: number;
  /** Total CPU time used, microseconds. */
  cpuMicros: number;
  /** Number of OOM kills the box has seen since it started. */
  oomKills: number;
  /** Bytes in use on the box's disk (its writable layer). */
  diskBytes: number;
  pids: number;
}

export interface Sandbox {
  readonly id: string;
  spawn(spec: SpawnSpec): BoxProcess;
  /**
   * Starts a long-running process (a service) detached from the server: no stdin, its stdout and stderr go
   * to a log on the sandbox's own disk (counted against its size) rather than through the server, so it
   * keeps running when the server restarts. `tty` is not taken.
   */
  startDetached(spec: SpawnSpec): DetachedProcess;
  /**
   * The command of the held terminal `key` (SpawnSpec.hold), started by this server or one before it:
   * connected again (whatever connection had it is dropped); null when nothing holds that terminal any more.
   */
  reattach(key: string): Promise<HeldTerminal | null>;
  /** Keys of the terminals held in the sandbox now (SpawnSpec.hold), whichever server started them. */
  heldTerminals(): Promise<string[]>;
  /**
   * Captures the writable layer, consistent at one instant (the box is frozen for the copy), into the
   * immutable layer `layerId`. Never leaves a partial layer under that id. With `stop`, every process of
   * the box is killed first and the writable layer itself becomes the layer, without a copy; the sandbox is
   * then only good for `destroy()` (suspend).
   */
  snapshot(layerId: string, opts?: { stop?: boolean }): Promise<{ sizeBytes: number }>;
  stats(): Promise<SandboxStats>;
  /**
   * TCP ports the sandbox's own processes listen on (IPv4 and IPv6), in its network namespace: a sidecar's
   * listener, not its box's nor another service's in the namespace they share.
   */
  listeningPorts(): Promise<Set<number>>;
  /** Resolves when the box's init has died (killed, crashed) outside of `destroy()`. */
  readonly died: Promise<void>;
  /** Kills every process and removes the cgroup and writable layer. Idempotent. */
  destroy(): Promise<void>;
}

/** Credentials for a registry: basic (also traded for a token when the registry asks for one) or a bearer token. */
export type RegistryAuth = { username: string; password: string } | { token: string };

export interface PullOptions {
  auth?: RegistryAuth;
  signal?: AbortSignal;
  /** Human-readable progress, one line at a time (resolving, each layer fetched or cached). */
  onProgress?: (line: string) => void;
  /**
   * Called with each layer's id once it is in the layer store (fetched or already there), before the next
   * one: the caller records it as in use then, so a pull that fails later leaves no layer nobody owns.
   */
  onLayer?: (layerId: string) => Promise<void>;
}

/** What an image's config says about how its processes run (OCI image config `config`). */
export interface ImageConfig {
  /** `NAME=value` entries, in the image's order. */
  env: string[];
  workingDir?: string;
  /** `user`, `uid`, `user:group` or `uid:gid`, as the image gives it. */
  user?: string;
  entrypoint?: string[];
  cmd?: string[];
  /** `80/tcp`, `53/udp`... */
  exposedPorts?: string[];
  labels?: Record<string, string>;
}

export interface PulledImage {
  /** Digest of the image's manifest (for linux/amd64 when the reference names an index): `sha256:…`. */
  digest: string;
  /** Layer ids, newest first: what `SandboxSpec.layers` takes (the image is then the whole root). */
  layers: string[];
  config: ImageConfig;
}

/** Layer ids of layers pulled from a registry: `oci-sha256-<hex of the compressed blob's digest>`. */
export function isImageLayer(id: string): boolean {
  return /^oci-sha256-[0-9a-f]{64}$/.test(id);
}

export interface RuntimeDriver {
  /**
   * The base image's name (it changes with its recipe): what a box without image layers stands on, so caches
   * keyed on "built on the base image" (blueprint steps) are keyed on this, not on a constant.
   */
  readonly baseImageName: string;
  /** Builds or verifies the base image (cached); logs progress. Idempotent. */
  prepare(): Promise<void>;
  create(spec: SandboxSpec): Promise<Sandbox>;
  /** Re-attaches to a sandbox that outlived a server restart; null when it is gone. */
  adopt(spec: SandboxSpec): Promise<Sandbox | null>;
  /**
   * Ids of every sandbox that left anything on this host (processes, cgroup or disk), alive or dead, known
   * to the database or not: what a restart must adopt or remove.
   */
  listSandboxes(): Promise<string[]>;
  /** Removes every trace of a sandbox id (processes, cgroup, disk), its sidecars' too, whether adopted or not. */
  remove(id: string): Promise<void>;
  layerExists(layerId: string): Promise<boolean>;
  deleteLayer(layerId: string): Promise<void>;
  /** Total bytes of a layer on disk. */
  layerSize(layerId: string): Promise<number>;
  /**
   * The layer as one stream, to make it on another node (`importLayer` there): its files with their owners
   * (box ids), modes, times, xattrs, ACLs, hard links, holes, whiteouts and opaque directories. A failure
   * while it streams is an error of the stream, and what was sent is no archive `importLayer` takes.
   * Rejects with `not_found` for a layer this node does not have.
   */
  exportLayer(layerId: string): Promise<Readable>;
  /**
   * Makes layer `layerId` from what `exportLayer` sent, read as hostile input: the archive is verified
   * whole, bounded in size, and unpacked where it reaches nothing outside the layer (no device but
   * whiteouts). Never leaves a partial layer under the id; a layer already here is kept (`body` is dropped).
   */
  importLayer(layerId: string, body: Readable): Promise<void>;
  /**
   * Pulls an image (`python:3.12`, `host:port/repo:tag`, `repo@sha256:…`) from its registry: each layer is
   * fetched once, verified by its digest and kept as a read-only layer named by it, so a second pull fetches
   * only the manifest. Rejects with `SandboxError` (`not_found`: no such image or tag; `failed`: refused
   * credentials, a digest mismatch, an unsafe or oversized layer, a timeout) and leaves no partial layer.
   */
  pullImage(ref: string, opts?: PullOptions): Promise<PulledImage>;
  /**
   * Links the sandbox's services port: a connection to 127.0.0.1:`port` inside the sandbox reaches the host's
   * unix socket `socketPath`, and nothing else of the host does. Replaces an earlier link of the sandbox; the
   * link lasts until `unlinkServices`, the sandbox's end or the server's.
   */
  linkServices(id: string, port: number, socketPath: string): Promise<void>;
  /** Drops a sandbox's services link and every connection through it. Idempotent. */
  unlinkServices(id: string): Promise<void>;
  /**
   * The sandbox's network link, or null when it has only a loopback (networking off, or a box from before
   * it). A new link reaches nothing until `setEgress`.
   */
  network(id: string): Promise<BoxNetwork | null>;
  /**
   * Sets (replaces) what a running sandbox may reach and what its DNS answers; pinned addresses are dropped.
   * The first call for a sandbox with a link starts its DNS (UDP and TCP 53 on the host end; resolves once
   * it answers there), which decides each question by the rules set last and stops with the sandbox's
   * `destroy`, its `remove` or the driver's `close`. A sandbox without a link: nothing to set.
   */
  setEgress(id: string, rules: EgressRules): Promise<void>;
  /** Lets a sandbox reach `addresses` (DNS answers for allowed names) for `ttlSeconds`. */
  pinEgress(id: string, addresses: string[], ttlSeconds: number): Promise<void>;
  /**
   * A TCP connection to `port` of the sandbox, on its network link (tunnels' bytes): resolves once connected,
   * rejects when nothing listens there or the sandbox has no link.
   */
  openPort(id: string, port: number): Promise<Duplex>;
  /** Releases what the driver holds for the server (not the boxes, which keep running). */
  close?(): Promise<void>;
}

export class SandboxError extends Error {
  constructor(
    readonly code: 'not_found' | 'capacity' | 'failed',
    message: string,
  ) {
    super(message);
  }
}
