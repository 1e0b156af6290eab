/** What a node may be asked for: `active` takes boxes, `draining` takes none and suspends its own, `lost` stopped answering. */
export const NODE_STATES = ['active', 'draining', 'lost'] as const;
export type NodeState = (typeof NODE_STATES)[number];

/** A size: what a node has, what its boxes hold, or what a box asks for. */
export interface Capacity {
  cpuCores: number;
  memoryBytes: number;
  diskBytes: number;
}

/** One server's row in the registry (`nodes` table). */
export interface NodeRecord {
  /** DEVBOXD_NODE_NAME. */
  name: string;
  /** DEVBOXD_NODE_URL: where other servers reach it (null: not advertised). */
  address: string | null;
  /** DEVBOXD_API_URL: where other API servers forward requests for its boxes (null: they cannot). */
  apiUrl: string | null;
  capacity: Capacity;
  state: NodeState;
  /** Its last renewal of the lease. */
  heartbeatMs: number;
  /** The lease runs out here unless renewed (heartbeat + DEVBOXD_NODE_LEASE_SECONDS). */
  leaseExpiresMs: number;
  /** DEVBOXD_NODE_GRACE_SECONDS of that node: how long after its lease ran out it is declared lost. */
  graceMs: number;
  startedAtMs: number;
  /** Set by a graceful stop (its boxes keep running, adopted at its next start): such a node is never declared lost. */
  stoppedAtMs: number | null;
  /** When another server declared it lost (cleared when it registers again). */
  lostAtMs: number | null;
  /** The devboxd version it runs. */
  version: string;
}

/** Whether a node's lease holds now: renewed in time, run out (not yet lost, or lost), or left by a graceful stop. */
export type LeaseState = 'live' | 'lapsed' | 'stopped';

/** A node with what its boxes hold: what `devboxd nodes` shows and placement reads. */
export interface NodeLoad extends NodeRecord {
  lease: LeaseState;
  /** Boxes with a sandbox there (every status but suspended and the ended ones). */
  devboxes: number;
  /** The sizes of those boxes, summed. */
  used: Capacity;
  /** Capacity minus used (negative where the operator overcommits). */
  free: Capacity;
}
