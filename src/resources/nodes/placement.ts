import { leaseState } from './lease.js';
import type { Capacity, NodeLoad, NodeRecord } from './types.js';

/** A box holding room on a node: its node and its size (the cgroup limits it was given). */
export interface BoxSize {
  node: string;
  size: Capacity;
}

const ZERO: Capacity = { cpuCores: 0, memoryBytes: 0, diskBytes: 0 };
const PARTS = ['cpuCores', 'memoryBytes', 'diskBytes'] as const;

const plus = (a: Capacity, b: Capacity): Capacity => ({
  cpuCores: a.cpuCores + b.cpuCores,
  memoryBytes: a.memoryBytes + b.memoryBytes,
  diskBytes: a.diskBytes + b.diskBytes,
});
const minus = (a: Capacity, b: Capacity): Capacity => ({
  cpuCores: a.cpuCores - b.cpuCores,
  memoryBytes: a.memoryBytes - b.memoryBytes,
  diskBytes: a.diskBytes - b.diskBytes,
});

/** Each node with what the boxes on it hold (boxes of nodes not in the registry are left out). */
export function loadsOf(nodes: readonly NodeRecord[], boxes: readonly BoxSize[], nowMs: number): NodeLoad[] {
  const used = new Map<string, { n: number; size: Capacity }>();
  for (const b of boxes) {
    const u = used.get(b.node) ?? { n: 0, size: ZERO };
    used.set(b.node, { n: u.n + 1, size: plus(u.size, b.size) });
  }
  return nodes.map((n) => {
    const u = used.get(n.name) ?? { n: 0, size: ZERO };
    return { ...n, lease: leaseState(n, nowMs), devboxes: u.n, used: u.size, free: minus(n.capacity, u.size) };
  });
}

/** Whether a new box may go to `n`: active, its lease live, and (given a size) room for it. */
export function canPlace(n: NodeLoad, size?: Capacity): boolean {
  if (n.state !== 'active' || n.lease !== 'live') return false;
  return !size || PARTS.every((p) => n.free[p] >= size[p]);
}

/**
 * Where a box of `size` goes: among the nodes that can take it, the least loaded, i.e. the one left with the
 * largest share of its capacity free on its scarcest part once the box is on it; ties go to the node with
 * fewer boxes, then by name. Undefined when no node has room.
 */
export function choose(nodes: readonly NodeLoad[], size: Capacity): NodeLoad | undefined {
  const headroom = (n: NodeLoad) => Math.min(...PARTS.map((p) => (n.capacity[p] > 0 ? (n.free[p] - size[p]) / n.capacity[p] : 0)));
  const scored = nodes.filter((n) => canPlace(n, size)).map((n) => ({ n, h: headroom(n) }));
  scored.sort((a, b) => b.h - a.h || a.n.devboxes - b.n.devboxes || (a.n.name < b.n.name ? -1 : 1));
  return scored[0]?.n;
}

/**
 * Where a box of `size` goes among `nodes` (those a request can be forwarded to, and this one): `prefer` (the
 * node of a box that resumes, or the one holding a new box's layers) when it can take it, else the least
 * loaded with room (`choose`). When none has room the box is overcommitted on an active node with a live
 * lease, as one server did before placement: `prefer`, else `local`, else the one with the fewest boxes.
 * Undefined when no node takes boxes at all (draining, lost, not answering).
 */
export function pick(nodes: readonly NodeLoad[], size: Capacity, local: string, prefer?: string): NodeLoad | undefined {
  const preferred = prefer === undefined ? undefined : nodes.find((n) => n.name === prefer);
  if (preferred && canPlace(preferred, size)) return preferred;
  const chosen = choose(nodes, size);
  if (chosen) return chosen;
  const open = nodes.filter((n) => canPlace(n));
  return open.find((n) => n.name === prefer) ?? open.find((n) => n.name === local) ?? [...open].sort((a, b) => a.devboxes - b.devboxes)[0];
}
