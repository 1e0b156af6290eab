/**
 * Starts a devbox's required services before it runs: each a sidecar sandbox from its image (pulled with the
 * service's credentials), in the box's network namespace (the box reaches it on localhost:<port>) and with
 * every other namespace its own, its own cgroup (SERVICE_LIMITS), running the image's ENTRYPOINT/CMD as its
 * USER with its ENV and the service's env, as its `options` change them (service-options.ts). The box turns
 * `running` once every service listens on the ports of its `port_mappings` (and passes its `--health-cmd`,
 * service-health.ts); one that exits first, or does not listen within the deadline, fails the box with
 * the reason and the end of its output. One that ends later, while the box runs, is not restarted: the box's
 * devbox log says so (with its memory limit when the kernel killed it for memory). Sidecars go with the
 * box's sandbox (the runtime removes them with it: shutdown, failure, suspend); a resumed box starts its
 * services afresh.
 */
import type { Gate } from '../../lib/gate.js';
import type { Logger } from '../../lib/logger.js';
import { sidecarId, SandboxError, type ImageConfig, type ResourceLimits, type RuntimeDriver, type Sandbox, type SandboxUser } from '../../runtime/driver.js';
import type { BootContext, BootStep } from '../devboxes/index.js';
import type { Devbox } from '../devboxes/index.js';
import { MAX_IMAGE_LAYERS } from '../../runtime/oci/pull.js';
import type { Sealer } from '../../platform/sealing/sealer.js';
import { openCredentials } from './credentials.js';
import { waitHealthy } from './service-health.js';
import { serviceOptions, type ServiceOptions } from './service-options.js';
import { MAX_SERVICES, servicePorts, servicesOf, type ServiceSpec } from './services.js';
import type { SqlBlueprintStore } from './sql-blueprint-store.js';

const GIB = 1024 ** 3;
/** Each service's own limits at most (its own cgroup, beside the box's); see limitsFor for its share of the box. */
export const SERVICE_LIMITS = { cpuCores: 1, memoryBytes: GIB, diskBytes: 4 * GIB, pids: 512 };
/** How much of the end of a service's output (stdout and stderr) explains its failure. */
const TAIL_BYTES = 2048;
const POLL_MS = 200;
/** Service image pulls waiting for a slot, host-wide; beyond it a box's service fails at once. */
export const SERVICE_PULL_QUEUE = 256;
/**
 * Service layers one blueprint may hold on a server: as many as its services could stand on at once. A tag
 * that moves at every pull would otherwise add layers at every boot for as long as the blueprint lives.
 */
export const MAX_BLUEPRINT_SERVICE_LAYERS = MAX_SERVICES * MAX_IMAGE_LAYERS;

const required = (d: Devbox): string[] => (Array.isArray(d.launchParameters.required_services) ? (d.launchParameters.required_services as string[]) : []);

interface Deps {
  store: () => SqlBlueprintStore;
  runtime: RuntimeDriver;
  /** Opens the services' image passwords. */
  sealer: Pick<Sealer, 'open'>;
  readyTimeoutMs: number;
  /** This server's node: the pulled layers are files on it. */
  node: string;
  /** Bounds the service image pulls running at once, host-wide (DEVBOXD_SERVICE_PULLS); more wait in its queue. */
  pulls: Gate;
  /** Tells the box's owner, in its devbox log, that a service ended while the box runs. */
  report: (devboxId: string, message: string) => void;
  log: Logger;
}

export function serviceBootStep(deps: Deps): BootStep {
  return {
    name: 'services',
    applies: (ctx) => required(ctx.devbox).length > 0,
    async run(ctx: BootContext) {
      const d = ctx.devbox;
      const b = d.blueprintId
        ? await deps.store().getById(d.blueprintId)
        : d.snapshotId
          ? await deps.store().blueprintOfSnapshot(d.accountId, d.snapshotId)
          : undefined;
      if (!b) throw new Error('required_services: the devbox has no blueprint to take its services from');
      const all = servicesOf(b);
      // Every name checked before any starts: none is left running unwatched by a late refusal.
      const picked = required(d).map((name) => {
        const i = all.findIndex((s) => s.name === name);
        if (i < 0) throw new Error(`required_services: blueprint ${b.id} has no service ${name}`);
        return i;
      });
      const deadline = Date.now() + deps.readyTimeoutMs;
      // Started side by side: the box waits for the slowest, not for their sum. The first failure, the box
      // ending or the deadline stops the others (their pulls and waits), not only the box's wait for them.
      const stop = new AbortController();
      const signal = AbortSignal.any([ctx.signal, stop.signal, AbortSignal.timeout(deps.readyTimeoutMs)]);
      try {
        await Promise.all(picked.map((i) => startService(deps, d, b.id, all[i]!, sidecarId(d.id, `svc${i}`), deadline, signal, ctx.signal)));
      } finally {
        stop.abort();
      }
    },
  };
}

/** `signal` stops this boot's start of the service; `boxSignal` fires once the box stops (ends or suspends). */
async function startService(
  deps: Deps,
  d: Devbox,
  blueprintId: string,
  s: ServiceSpec,
  id: string,
  deadline: number,
  signal: AbortSignal,
  boxSignal: AbortSignal,
): Promise<void> {
  const what = `service ${s.name} (${s.image})`;
  const held = (await deps.store().serviceLayers(blueprintId, deps.node)).length;
  if (held >= MAX_BLUEPRINT_SERVICE_LAYERS) {
    throw new Error(
      `${what}: the blueprint's service images hold ${held} layers on this server already (at most ${MAX_BLUEPRINT_SERVICE_LAYERS}: does a tag move at every pull?); create the blueprint again with images pinned by digest, and delete this one to free them`,
    );
  }
  const release = await deps.pulls.enter(signal);
  if (!release)
    throw new Error(
      `${what}: ${signal.aborted ? 'no image pull slot was free before the deadline (DEVBOXD_SERVICE_READY_TIMEOUT) or the box ended' : 'too many service image pulls are waiting; try again later'}`,
    );
  let image;
  try {
    // Each layer recorded as it lands, before a sidecar stands on it (and kept by a pull that fails later): in
    // use while the blueprint is (another blueprint's delete keeps it), freed when no blueprint names it.
    const onLayer = (layer: string) => deps.store().addServiceLayers(blueprintId, deps.node, [layer]);
    image = await deps.runtime.pullImage(s.image, { auth: openCredentials(s, blueprintId, deps.sealer), signal, onLayer });
  } catch (err) {
    throw new Error(`${what}: pulling the image failed: ${(err as Error).message}`);
  } finally {
    release();
  }
  // Options were checked when the blueprint was created; what they ask goes over what the image says.
  const opts = serviceOptions(s.options);
  const argv = opts.entrypoint ? [opts.entrypoint] : [...(image.config.entrypoint ?? []), ...(image.config.cmd ?? [])];
  if (!argv.length) throw new Error(`${what}: the image has no ENTRYPOINT or CMD to run`);
  const user = imageUser(opts.user ?? image.config.user);
  if (signal.aborted && Date.now() <= deadline) throw new Error(`${what}: not started (the box ended or another service failed)`);
  let sandbox: Sandbox;
  const limits = capped(limitsFor(d.sandbox.limits, required(d).length), opts);
  try {
    sandbox = await deps.runtime.create({ id, hostname: opts.hostname ?? s.name, layers: image.layers, limits, user, joinNetworkOf: d.id });
  } catch (err) {
    throw new Error(`${what}: ${err instanceof SandboxError ? err.message : `the sandbox did not start: ${(err as Error).message}`}`);
  }
  // Detached: the service's output goes to a log on its own disk, and it outlives a server restart.
  const env = { ...envOf(image.config), ...opts.env, ...(s.env ?? {}) };
  const cwd = opts.workdir ?? (image.config.workingDir || '/');
  const proc = sandbox.startDetached({ argv, env, cwd, asRoot: user.uid === 0 });
  let exited: string | null = null;
  let ready = false;
  const tail = async () => {
    const t = (await proc.logTail(TAIL_BYTES).catch(() => '')).trim();
    return t ? `: ${t}` : '';
  };
  // An end before the service was ready fails the box (below). One after it (or between the last check and
  // `ready`) is reported, unless the box has stopped, which stopped the service.
  const reportEnd = async () => {
    if (!ready || !exited || boxSignal.aborted) return;
    const oom = ((await sandbox.stats().catch(() => null))?.oomKills ?? 0) > 0;
    const why = oom ? `was killed for exceeding its memory limit of ${limits.memoryBytes} bytes (its share of the box's memory)` : `exited with ${exited}`;
    deps.log.warn({ devbox: d.id, service: s.name, exit: exited, oom }, 'service ended while its box runs');
    deps.report(d.id, `${what} ${why} while the box runs; it is not restarted${await tail()}`);
  };
  void proc.exited.then((e) => {
    exited = e.signal ? `signal ${e.signal}` : `status ${e.exitCode}`;
    deps.log.info({ devbox: d.id, service: s.name, exit: exited }, 'service ended');
    return reportEnd();
  });
  const ports = servicePorts(s, s.name);
  for (;;) {
    if (signal.aborted && Date.now() <= deadline) throw new Error(`${what}: stopped before it was ready (the box ended or another service failed)`);
    if (exited) throw new Error(`${what} exited with ${exited} before it was ready${await tail()}`);
    let listening: Set<number>;
    try {
      listening = await sandbox.listeningPorts();
    } catch {
      throw new Error(`${what} stopped before it was ready`);
    }
    const missing = ports.filter((p) => !listening.has(p));
    if (!missing.length) break;
    if (Date.now() > deadline) {
      throw new Error(`${what} did not listen on port ${missing.join(', ')} in time (DEVBOXD_SERVICE_READY_TIMEOUT)${await tail()}`);
    }
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
  if (opts.health) {
    const stopped = async () =>
      signal.aborted && Date.now() <= deadline
        ? `${what}: stopped before it was healthy (the box ended or another service failed)`
        : exited
          ? `${what} exited with ${exited} before it was healthy${await tail()}`
          : null;
    await waitHealthy(sandbox, opts.health, { what, deadline, stopped, asRoot: user.uid === 0, env, cwd });
  }
  ready = true;
  deps.log.info({ devbox: d.id, service: s.name, ports }, 'service ready');
  void reportEnd();
}

/** A service's limits under what its options ask (`--memory`, `--cpus`, `--pids-limit`): lower, never higher. */
function capped(l: ResourceLimits, o: ServiceOptions): ResourceLimits {
  return {
    ...l,
    memoryBytes: Math.min(l.memoryBytes, o.memoryBytes ?? Number.POSITIVE_INFINITY),
    cpuCores: Math.min(l.cpuCores, o.cpuCores ?? Number.POSITIVE_INFINITY),
    pids: Math.min(l.pids, o.pids ?? Number.POSITIVE_INFINITY),
  };
}

/** The image's USER as a sandbox user: `name` or `uid`, with any `:group` (the user's own group is used). */
function imageUser(spec: string | undefined): SandboxUser {
  const u = (spec ?? '').split(':')[0]!;
  if (!u || u === 'root' || u === '0') return { name: 'root', uid: 0 };
  if (/^\d+$/.test(u)) return { name: '', uid: Number(u) };
  return { name: u, uid: -1 };
}

function envOf(c: ImageConfig): Record<string, string> {
  const env: Record<string, string> = {};
  for (const e of c.env) {
    const eq = e.indexOf('=');
    if (eq > 0) env[e.slice(0, eq)] = e.slice(eq + 1);
  }
  return env;
}

/**
 * A service's limits when the box runs `n`: the box's CPU, memory and pids divided among them (so its services
 * together never exceed the box's own size), and a disk no larger than the box's; each within SERVICE_LIMITS.
 */
export function limitsFor(box: ResourceLimits, n: number): ResourceLimits {
  const share = Math.max(1, n);
  return {
    cpuCores: Math.min(SERVICE_LIMITS.cpuCores, box.cpuCores / share),
    memoryBytes: Math.min(SERVICE_LIMITS.memoryBytes, Math.floor(box.memoryBytes / share)),
    diskBytes: Math.min(SERVICE_LIMITS.diskBytes, box.diskBytes),
    pids: Math.max(1, Math.min(SERVICE_LIMITS.pids, Math.floor(box.pids / share))),
  };
}
