import { TERMINAL, type DevboxStatus } from '../devboxes/index.js';
import type { NodeDirectory } from './directory.js';

/** Where a request for a box goes: here, the API server of the box's node, or nowhere now (why, naming it). */
export type Route = { here: true } | { node: string; url: string } | { node: string; why: string };

export const HERE: Route = { here: true };

/** Ended boxes remembered at most (then forgotten all at once, and read again as they come). */
const MAX_ENDED = 10_000;

export interface RouterDeps {
  /** DEVBOXD_NODE_NAME. */
  node: string;
  /** Whether the box has a sandbox on this node now (then it is this node's without a read). */
  active(id: string): boolean;
  /** The box's node and status (one read by primary key), undefined for an unknown id. */
  locate(id: string): Promise<{ node: string; status: DevboxStatus } | undefined>;
  /** The box a tunnel key (a tunnel's or a PTY tunnel's) belongs to. */
  tunnelBox(key: string): Promise<string | undefined>;
  directory: NodeDirectory;
}

/**
 * Which node serves a request for a box: the box's own, the one node that runs its sandbox, holds its disk
 * and its executions' streams. A box with a sandbox here costs no read; any other one read of its node. An
 * unknown box, and a box that ended (its record is all that is left of it, in the shared database), are served
 * here: the API answers them as it always did (404, the ended view).
 */
export class Router {
  /** Boxes that ended: served here for good (an ended box never runs again, anywhere), so read once. */
  private readonly ended = new Set<string>();

  constructor(private readonly deps: RouterDeps) {}

  /** Whether the box's requests are this node's without a read: its sandbox runs here, or it ended. */
  runsHere(id: string): boolean {
    return this.deps.active(id) || this.ended.has(id);
  }

  async forBox(id: string): Promise<Route> {
    if (this.runsHere(id)) return HERE;
    const at = await this.deps.locate(id);
    if (at && TERMINAL.has(at.status)) {
      if (this.ended.size >= MAX_ENDED) this.ended.clear();
      this.ended.add(id);
    }
    // Rows from before node names ('') are whichever server opens the database's.
    if (!at || at.node === this.deps.node || at.node === '' || TERMINAL.has(at.status)) return HERE;
    const reach = await this.deps.directory.reach(at.node);
    return { node: at.node, ...reach };
  }

  /** A tunnel's requests go to its box's node; an unknown key is answered here (404). */
  async forTunnel(key: string): Promise<Route> {
    const id = await this.deps.tunnelBox(key);
    return id === undefined ? HERE : this.forBox(id);
  }
}
