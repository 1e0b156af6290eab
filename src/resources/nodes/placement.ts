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
