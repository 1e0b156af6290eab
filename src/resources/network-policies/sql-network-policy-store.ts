import { DomainError, ERRORS } from '../../platform/errors.js';
import type { SqlExecutor } from '../../platform/store/sql/executor.js';
import { paginate } from '../../platform/store/sql/paginate.js';
import { nameFilters } from '../../platform/store/sql/name-filter.js';
import type { Page, PageQuery } from '../../platform/store/types.js';
import type { Egress, NetworkPolicy, PolicyListFilter } from './types.js';

interface Row {
  id: string;
  account_id: string;
  name: string;
  description: string | null;
  egress: string;
  create_time_ms: number;
  update_time_ms: number;
}

const fromRow = (r: Row): NetworkPolicy => ({
  id: r.id,
  accountId: r.account_id,
  name: r.name,
  description: r.description,
  egress: JSON.parse(r.egress) as Egress,
  createTimeMs: Number(r.create_time_ms),
  updateTimeMs: Number(r.update_time_ms),
});

/** Statuses after which a box never runs again: its binding no longer holds its policy. */
const ENDED = "('shutdown', 'failure')";

/** The network policy tables over either dialect; built over `store.db` (or a transaction's `tx.db`). */
export class SqlNetworkPolicyStore {
  constructor(private readonly db: SqlExecutor) {}

  async insert(p: NetworkPolicy): Promise<void> {
    try {
      await this.db.query(
        'INSERT INTO network_policies (id, account_id, name, description, egress, create_time_ms, update_time_ms) VALUES (?, ?, ?, ?, ?, ?, ?)',
        [p.id, p.accountId, p.name, p.description, JSON.stringify(p.egress), p.createTimeMs, p.updateTimeMs],
      );
    } catch (err) {
      if (err instanceof DomainError && err.code === 'conflict') throw ERRORS.invalid(`name: a network policy named ${p.name} already exists`);
      throw err;
    }
  }

  async get(accountId: string, id: string): Promise<NetworkPolicy | undefined> {
    const { rows } = await this.db.query<Row>('SELECT * FROM network_policies WHERE account_id = ? AND id = ?', [accountId, id]);
    return rows[0] && fromRow(rows[0]);
  }

  list(accountId: string, filter: PolicyListFilter, page: PageQuery): Promise<Page<NetworkPolicy>> {
    const where = ['account_id = ?'];
    const params: unknown[] = [accountId];
    if (filter.id) {
      where.push('id = ?');
      params.push(filter.id);
    }
    nameFilters(where, params, filter);
    return paginate<Row, NetworkPolicy>(this.db, 'network_policies', where, params, page, fromRow);
  }

  /** Writes the whole policy as the caller merged it, only if nobody changed it since (`seenUpdateMs`). */
  async replace(p: NetworkPolicy, seenUpdateMs: number): Promise<boolean> {
    try {
      const { rowCount } = await this.db.query(
        'UPDATE network_policies SET name = ?, description = ?, egress = ?, update_time_ms = ? WHERE account_id = ? AND id = ? AND update_time_ms = ?',
        [p.name, p.description, JSON.stringify(p.egress), p.updateTimeMs, p.accountId, p.id, seenUpdateMs],
      );
      return rowCount > 0;
    } catch (err) {
      if (err instanceof DomainError && err.code === 'conflict') throw ERRORS.invalid(`name: a network policy named ${p.name} already exists`);
      throw err;
    }
  }

  /**
   * Deletes the policy unless a box that has not ended is bound to it (then resolves 'in_use'); bindings of
   * ended boxes go with it. Undefined when the account has no such policy.
   */
  async delete(accountId: string, id: string): Promise<NetworkPolicy | 'in_use' | undefined> {
    return this.db.transaction(async (tx) => {
      const { rows } = await tx.query<Row>('SELECT * FROM network_policies WHERE account_id = ? AND id = ?', [accountId, id]);
      if (!rows[0]) return undefined;
      const live = await tx.query<{ n: number }>(
        `SELECT COUNT(*) AS n FROM devbox_network_policies b JOIN devboxes d ON d.id = b.devbox_id WHERE b.policy_id = ? AND d.status NOT IN ${ENDED}`,
        [id],
      );
      if (Number(live.rows[0]!.n) > 0) return 'in_use';
      await tx.query('DELETE FROM devbox_network_policies WHERE policy_id = ?', [id]);
      await tx.query('DELETE FROM network_policies WHERE id = ?', [id]);
      return fromRow(rows[0]);
    });
  }

  async bind(devboxId: string, policyId: string): Promise<void> {
    await this.db.query('INSERT INTO devbox_network_policies (devbox_id, policy_id) VALUES (?, ?)', [devboxId, policyId]);
  }

  /** The policy a box is bound to, if any. */
  async policyOf(devboxId: string): Promise<NetworkPolicy | undefined> {
    const { rows } = await this.db.query<Row>('SELECT p.* FROM devbox_network_policies b JOIN network_policies p ON p.id = b.policy_id WHERE b.devbox_id = ?', [
      devboxId,
    ]);
    return rows[0] && fromRow(rows[0]);
  }

  /** Boxes of `node` bound to the policy that have not ended. */
  async liveBoxes(policyId: string, node: string): Promise<string[]> {
    const { rows } = await this.db.query<{ devbox_id: string }>(
      `SELECT b.devbox_id FROM devbox_network_policies b JOIN devboxes d ON d.id = b.devbox_id WHERE b.policy_id = ? AND d.node = ? AND d.status NOT IN ${ENDED}`,
      [policyId, node],
    );
    return rows.map((r) => r.devbox_id);
  }
}
