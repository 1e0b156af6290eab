import type { SqlExecutor } from '../../platform/store/sql/executor.js';
import type { BrokerMount } from './types.js';

interface Row {
  devbox_id: string;
  position: number;
  axon_id: string;
  protocol: string;
  agent_binary: string;
  launch_args: string;
  working_directory: string | null;
  delivered_sequence: number;
}

const fromRow = (r: Row): BrokerMount => ({
  devboxId: r.devbox_id,
  position: Number(r.position),
  axonId: r.axon_id,
  protocol: r.protocol as BrokerMount['protocol'],
  agentBinary: r.agent_binary,
  launchArgs: JSON.parse(r.launch_args) as string[],
  workingDirectory: r.working_directory,
  deliveredSequence: Number(r.delivered_sequence),
});

/** The devboxes' broker mounts and how far each has delivered its axon. */
export class SqlBrokerStore {
  constructor(private readonly db: SqlExecutor) {}

  async insert(m: BrokerMount): Promise<void> {
    await this.db.query(
      'INSERT INTO axon_broker_mounts (devbox_id, position, axon_id, protocol, agent_binary, launch_args, working_directory, delivered_sequence) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
      [m.devboxId, m.position, m.axonId, m.protocol, m.agentBinary, JSON.stringify(m.launchArgs), m.workingDirectory, m.deliveredSequence],
    );
  }

  async ofDevbox(devboxId: string): Promise<BrokerMount[]> {
    const { rows } = await this.db.query<Row>('SELECT * FROM axon_broker_mounts WHERE devbox_id = ? ORDER BY position', [devboxId]);
    return rows.map(fromRow);
  }

  /** The devboxes an axon is mounted into. */
  async devboxesOf(axonId: string): Promise<string[]> {
    const { rows } = await this.db.query<{ devbox_id: string }>('SELECT DISTINCT devbox_id FROM axon_broker_mounts WHERE axon_id = ?', [axonId]);
    return rows.map((r) => r.devbox_id);
  }

  /** Never moves back (a late write of an older position loses). */
  async delivered(devboxId: string, position: number, sequence: number): Promise<void> {
    await this.db.query('UPDATE axon_broker_mounts SET delivered_sequence = ? WHERE devbox_id = ? AND position = ? AND delivered_sequence < ?', [
      sequence,
      devboxId,
      position,
      sequence,
    ]);
  }
}
