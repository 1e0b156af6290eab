import type { Logger } from '../../lib/logger.js';
import { ERRORS } from '../../platform/errors.js';
import type { JobRunner, LostJobs } from '../../platform/jobs/job-runner.js';
import type { Store } from '../../platform/store/types.js';
import { type Devbox, type DevboxService, ON_NODE } from '../devboxes/index.js';
import type { NodeConfig } from './config.js';
import { leaseUntil, lostReason, renewEveryMs } from './lease.js';
import { type BoxSize, canPlace, choose, loadsOf, pick } from './placement.js';
import { SqlNodeStore } from './sql-node-store.js';
import type { Capacity, NodeLoad, NodeRecord, NodeState } from './types.js';

/** The exit status of a command whose box stopped under it (as executions record it). */
const BOX_STOPPED_STATUS = 137;

export interface NodeServiceDeps {
  store: Store;
  devboxes: DevboxService;
  jobs: JobRunner;
  /** DEVBOXD_NODE_NAME. */
  node: string;
  config: NodeConfig;
  /** DEVBOXD_API_URL as set or derived (null: no other API server forwards to this one). */
  apiUrl: string | null;
  /** What this node offers (settings, else the host's). */
  capacity: Capacity;
  version: string;
  log: Logger;
}

/** Every node with what its boxes hold, as `devboxd nodes` shows them and placement weighs them. */
export async function readLoads(store: Store, nowMs = Date.now()): Promise<NodeLoad[]> {
  return loadsOf(await new SqlNodeStore(store.db).list(), await boxSizes(store), nowMs);
}

/** The boxes holding room on their node (a sandbox there), with their sizes. */
async function boxSizes(store: Store): Promise<BoxSize[]> {
  return (await store.devboxes.listByStatus(ON_NODE)).map((d) => ({
    node: d.node,
    size: { cpuCores: d.sandbox.limits.cpuCores, memoryBytes: d.sandbox.limits.memoryBytes, diskBytes: d.sandbox.limits.diskBytes },
  }));
}

/**
 * The node registry as a server runs it: registers this node at start, renews its lease on a timer, declares
 * lost the nodes silent past their lease and grace (failing their boxes and taking over or ending their jobs),
 * runs the drain hooks while this node is draining, and answers where a box may go.
 */
export class NodeService {
  private readonly nodes: SqlNodeStore;
  /** This node's state as of its last renewal (an operator's `devboxd drain` shows here at the next one). */
  private state: NodeState = 'active';
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> | undefined;
  private draining: Promise<void> | undefined;
  private readonly drainers: (() => Promise<unknown>)[] = [];

  constructor(private readonly deps: NodeServiceDeps) {
    this.nodes = new SqlNodeStore(deps.store.db);
  }

  /** This node's row, fresh: a lost node that comes back is active again; a draining one stays draining. */
  async register(): Promise<NodeRecord> {
    const now = Date.now();
    const { config } = this.deps;
    const before = await this.nodes.get(this.deps.node);
    const me = await this.nodes.register({
      name: this.deps.node,
      address: config.url,
      apiUrl: this.deps.apiUrl,
      capacity: this.deps.capacity,
      heartbeatMs: now,
      leaseExpiresMs: leaseUntil(now, config.leaseMs),
      graceMs: config.graceMs,
      startedAtMs: now,
      version: this.deps.version,
    });
    if (before?.state === 'lost')
      this.deps.log.warn({ node: me.name }, 'this node was declared lost while it was down: its boxes were failed, none is adopted');
    this.state = me.state;
    return me;
  }

  /** Renewals and sweeps from now on, every third of the lease; the first at once. */
  start(): Promise<void> {
    this.timer ??= setInterval(() => void this.tick(), renewEveryMs(this.deps.config.leaseMs));
    this.timer.unref();
    return this.tick();
  }

  /**
   * Renews this node's lease, then declares lost every other node overdue (one server wins each), and starts
   * the drain hooks while this node is draining. A tick still going is joined, not doubled.
   */
  tick(): Promise<void> {
    this.ticking ??= this.sweep()
      .catch((err) => this.deps.log.warn({ err }, 'node lease renewal or sweep failed; it runs again'))
      .finally(() => (this.ticking = undefined));
    return this.ticking;
  }

  /** `fn` runs (once at a time) at every renewal that finds this node draining: it suspends the node's boxes. */
  onDraining(fn: () => Promise<unknown>): void {
    this.drainers.push(fn);
  }

  /** 503 while this node is draining: it takes no new box, and resumes none (they would be suspended again). */
  refuseWhileDraining(what: 'create' | 'resume'): void {
    if (this.state === 'draining') {
      throw ERRORS.unavailable(`node ${this.deps.node} is draining (devboxd drain ${this.deps.node}): ${what} refused, retry later or on another node`);
    }
  }

  /** Every node with its load. */
  list(): Promise<NodeLoad[]> {
    return readLoads(this.deps.store);
  }

  /** Whether a new box (of `size`, when given) may go to node `name` now. */
  async canPlace(name: string, size?: Capacity): Promise<boolean> {
    const n = (await this.list()).find((l) => l.name === name);
    return n !== undefined && canPlace(n, size);
  }

  /** The node a box of `size` goes to: the least loaded active node with room; undefined when none has room. */
  async place(size: Capacity): Promise<string | undefined> {
    return choose(await this.list(), size)?.name;
  }

  /**
   * The node a box of `size` goes to among this one and those with an API address (a request reaches them
   * forwarded), by `pick`: `prefer` when it can take it, else the least loaded with room, else overcommitted.
   * A refusal (503) when no node takes boxes now.
   */
  async placeBox(size: Capacity, what: 'create' | 'resume', prefer?: string): Promise<string> {
    const reachable = (await this.nodes.list()).filter((n) => n.name === this.deps.node || n.apiUrl !== null);
    // Alone, this node takes the box whatever its load (as one server always did): the boxes are not read.
    const loads = loadsOf(reachable, reachable.length > 1 ? await boxSizes(this.deps.store) : [], Date.now());
    const to = pick(loads, size, this.deps.node, prefer)?.name;
    if (to !== undefined) return to;
    this.refuseWhileDraining(what);
    throw ERRORS.unavailable(`no node takes a devbox now (every node is draining, lost or not answering: devboxd nodes): ${what} refused, retry later`);
  }

  /** Stops the timer and leaves the row marked stopped: the boxes keep running and are adopted at the next start. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.ticking;
    await this.draining;
    await this.nodes.stopped(this.deps.node, Date.now()).catch((err) => this.deps.log.warn({ err }, 'could not record the stop of this node'));
  }

  private async sweep(): Promise<void> {
    const now = Date.now();
    const me = (await this.nodes.renew(this.deps.node, now, leaseUntil(now, this.deps.config.leaseMs))) ?? (await this.register());
    if (me.lostAtMs !== null) this.deps.log.warn({ node: me.name }, 'this node was declared lost (its lease lapsed): its boxes were failed');
    this.state = me.state;
    if (me.state === 'draining') this.drain();
    for (const n of await this.nodes.overdue(now)) {
      if (n.name === this.deps.node) continue;
      // One node's failure (its transaction rolled back whole) leaves the others to be declared now.
      await this.declareLost(n).catch((err) => this.deps.log.error({ err, node: n.name }, 'declaring a node lost failed; the next sweep tries again'));
    }
  }

  private drain(): void {
    if (this.draining || !this.drainers.length) return;
    this.draining = Promise.all(this.drainers.map((fn) => fn()))
      .then(() => undefined)
      .catch((err) => this.deps.log.error({ err }, 'draining this node failed; the next renewal tries again'))
      .finally(() => (this.draining = undefined));
  }

  /**
   * Declares `n` lost, in one transaction with what follows from it, so that a server dying half-way leaves it
   * to the next: its boxes with a sandbox there fail with a reason naming it, their unfinished executions end,
   * and its open jobs are taken over (kinds that run anywhere) or ended. Once committed, the boxes end here as
   * any end does (waiters, scenario runs) and the jobs run or settle their subjects. Whether this server won.
   */
  async declareLost(n: NodeRecord): Promise<boolean> {
    const now = Date.now();
    const reason = lostReason(n.name, n.heartbeatMs);
    const done = await this.deps.store.transaction(async (tx) => {
      if (!(await new SqlNodeStore(tx.db).markLost(n.name, now))) return undefined;
      const boxes = await this.deps.devboxes.failLost(tx, n.name, reason);
      await endExecutions(tx, n.name, boxes, now);
      const jobs: LostJobs = await this.deps.jobs.claimLost(n.name, reason, tx.jobs);
      return { boxes, jobs };
    });
    if (!done) return false;
    this.deps.log.warn(
      { node: n.name, devboxes: done.boxes.map((d) => d.id), jobsTaken: done.jobs.moved.length, jobsEnded: done.jobs.ended.length },
      `${reason}: declared lost`,
    );
    this.deps.devboxes.lostEnded(done.boxes);
    await this.deps.jobs.afterLost(done.jobs);
    return true;
  }
}

/** The commands the failed boxes ran end as under any box that stops: 137, their output as far as recorded. */
async function endExecutions(tx: Store, node: string, boxes: readonly Devbox[], now: number): Promise<void> {
  if (!boxes.length) return;
  const failed = new Set(boxes.map((d) => d.id));
  for (const e of await tx.executions.listUnfinished(node)) {
    if (failed.has(e.devboxId)) await tx.executions.update({ ...e, status: 'completed', exitStatus: BOX_STOPPED_STATUS, endTimeMs: now });
  }
}
