import type { Devbox } from '../../devboxes/index.js';

/**
 * `launch_parameters.available_ports`: a box created with a non-empty list is reached through its tunnel on
 * those ports only. A request for another port is answered as a port with nothing listening is (the same
 * 502 and message), so the list cannot be told apart from a closed port. Launch parameters never change in
 * a box's life, so each box's list is read once and kept.
 */
export class PortGate {
  private readonly byBox = new Map<string, ReadonlySet<number> | null>();

  constructor(private readonly devboxById: (id: string) => Promise<Devbox | undefined>) {}

  /** Whether the tunnel may reach `port` of the box; an unknown box passes (the request fails further on). */
  async allows(id: string, port: number): Promise<boolean> {
    let ports = this.byBox.get(id);
    if (ports === undefined) {
      const d = await this.devboxById(id);
      if (!d) return true;
      ports = availablePorts(d);
      if (this.byBox.size > 10_000) this.byBox.clear();
      this.byBox.set(id, ports);
    }
    return ports === null || ports.has(port);
  }
}

/** The box's list as a set, or null: no list (or an empty one) reaches every port. */
export function availablePorts(d: Pick<Devbox, 'launchParameters'>): ReadonlySet<number> | null {
  const list = (d.launchParameters as { available_ports?: unknown }).available_ports;
  return Array.isArray(list) && list.length > 0 ? new Set(list as number[]) : null;
}

/** What a client is told when nothing answers on the port, whether it is closed or outside the list. */
export function nothingAnswers(port: number, devboxId: string, code: string): string {
  return `nothing answers on port ${port} of devbox ${devboxId} (${code})`;
}
