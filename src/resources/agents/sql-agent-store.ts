import { marks, type SqlExecutor } from '../../platform/store/sql/executor.js';
import { paginate } from '../../platform/store/sql/paginate.js';
import { nameFilters } from '../../platform/store/sql/name-filter.js';
import type { Page, PageQuery } from '../../platform/store/types.js';
import type { Agent, AgentListFilter, AgentSource, ResolvedAgentMount } from './types.js';

interface Row {
  id: string;
  account_id: string;
  name: string;
  version: string | null;
  source: string | null;
  is_public: number;
  create_time_ms: number | string;
}

const fromRow = (r: Row): Agent => ({
  id: r.id,
  accountId: r.account_id,
  name: r.name,
  version: r.version,
  source: r.source === null ? null : (JSON.parse(r.source) as AgentSource),
  isPublic: Number(r.is_public) === 1,
  createTimeMs: Number(r.create_time_ms),
});

const COLUMNS = ['id', 'account_id', 'name', 'version', 'source', 'is_public', 'create_time_ms'];
/** Boxes in these states count for nothing: they never run again. */
const ENDED = "('shutdown', 'failure')";

/** The agents and devbox_agents tables over either dialect. */
export class SqlAgentStore {
  constructor(private readonly db: SqlExecutor) {}

  /**
   * Inserts the agent unless its account already holds `max` (then answers the count held, else null). The
   * count and the insert share one transaction, under a per-account lock on PostgreSQL (SQLite's transactions
   * run one at a time), so concurrent creates cannot pass the bound together.
   */
  insertBounded(a: Agent, max: number): Promise<number | null> {
    return this.db.transaction(async (tx) => {
      if (tx.dialect === 'postgres') await tx.query('SELECT pg_advisory_xact_lock(hashtext(?))', [`agents:${a.accountId}`]);
      const store = new SqlAgentStore(tx);
      const held = await store.count(a.accountId);
      if (held >= max) return held;
      await store.insert(a);
      return null;
    });
  }

  async insert(a: Agent): Promise<void> {
    await this.db.query(`INSERT INTO agents (${COLUMNS.join(', ')}) VALUES (${marks(COLUMNS)})`, [
      a.id,
      a.accountId,
      a.name,
      a.version,
      a.source === null ? null : JSON.stringify(a.source),
      a.isPublic ? 1 : 0,
      a.createTimeMs,
    ]);
  }

  async getById(id: string): Promise<Agent | undefined> {
    const { rows } = await this.db.query<Row>('SELECT * FROM agents WHERE id = ?', [id]);
    return rows[0] && fromRow(rows[0]);
  }

  /** The most recently created agent of that name: the account's own, else a public one. */
  async latestByName(accountId: string, name: string): Promise<Agent | undefined> {
    const { rows } = await this.db.query<Row>(
      'SELECT * FROM agents WHERE name = ? AND (account_id = ? OR is_public = 1) ORDER BY CASE WHEN account_id = ? THEN 0 ELSE 1 END, id DESC LIMIT 1',
      [name, accountId, accountId],
    );
    return rows[0] && fromRow(rows[0]);
  }

  async count(accountId: string): Promise<number> {
    const { rows } = await this.db.query<{ n: number | string }>('SELECT COUNT(*) AS n FROM agents WHERE account_id = ?', [accountId]);
    return Number(rows[0]?.n ?? 0);
  }

  /** The account's agents (`accountId`), or every account's public ones (`accountId` null). */
  list(accountId: string | null, filter: AgentListFilter, page: PageQuery): Promise<Page<Agent>> {
    const scope = accountId === null ? 'is_public = 1' : 'account_id = ?';
    const scopeParams: unknown[] = accountId === null ? [] : [accountId];
    const where = [scope];
    const params = [...scopeParams];
    if (filter.isPublic !== undefined) {
      where.push('is_public = ?');
      params.push(filter.isPublic ? 1 : 0);
    }
    nameFilters(where, params, filter);
    if (filter.version === 'latest') {
      // Ids are time-ordered: the greatest id of a name is its most recent agent.
      where.push(`id IN (SELECT MAX(id) FROM agents WHERE ${scope} GROUP BY name)`);
      params.push(...scopeParams);
    } else if (filter.version) {
      where.push('version = ?');
      params.push(filter.version);
    }
    return paginate<Row, Agent>(this.db, 'agents', where, params, page, fromRow);
  }

  /** False when the account has no such agent (public agents of others are not theirs to delete). */
  async remove(accountId: string, id: string): Promise<boolean> {
    const { rowCount } = await this.db.query('DELETE FROM agents WHERE id = ? AND account_id = ?', [id, accountId]);
    return rowCount > 0;
  }

  async setPublic(id: string, isPublic: boolean): Promise<boolean> {
    const { rowCount } = await this.db.query('UPDATE agents SET is_public = ? WHERE id = ?', [isPublic ? 1 : 0, id]);
    return rowCount > 0;
  }

  async insertMounts(accountId: string, devboxId: string, mounts: ResolvedAgentMount[]): Promise<void> {
    for (const [i, m] of mounts.entries()) {
      await this.db.query('INSERT INTO devbox_agents (devbox_id, position, account_id, agent_id, agent_name, agent, agent_path) VALUES (?, ?, ?, ?, ?, ?, ?)', [
        devboxId,
        i,
        accountId,
        m.agent.id,
        m.agent.name,
        JSON.stringify(m.agent),
        m.agentPath,
      ]);
    }
  }

  async mountsOf(devboxId: string): Promise<ResolvedAgentMount[]> {
    const { rows } = await this.db.query<{ agent: string; agent_path: string | null }>(
      'SELECT agent, agent_path FROM devbox_agents WHERE devbox_id = ? ORDER BY position',
      [devboxId],
    );
    return rows.map((r) => ({ agent: JSON.parse(r.agent) as ResolvedAgentMount['agent'], agentPath: r.agent_path }));
  }

  /** Per agent name, the account's boxes that have not ended and mounted an agent of that name; and all such boxes. */
  async devboxCounts(accountId: string): Promise<{ counts: Record<string, number>; total: number }> {
    const { rows } = await this.db.query<{ agent_name: string; n: number | string }>(
      `SELECT a.agent_name, COUNT(DISTINCT a.devbox_id) AS n FROM devbox_agents a JOIN devboxes d ON d.id = a.devbox_id
       WHERE a.account_id = ? AND d.status NOT IN ${ENDED} GROUP BY a.agent_name`,
      [accountId],
    );
    const { rows: all } = await this.db.query<{ n: number | string }>(
      `SELECT COUNT(DISTINCT a.devbox_id) AS n FROM devbox_agents a JOIN devboxes d ON d.id = a.devbox_id
       WHERE a.account_id = ? AND d.status NOT IN ${ENDED}`,
      [accountId],
    );
    return { counts: Object.fromEntries(rows.map((r) => [r.agent_name, Number(r.n)])), total: Number(all[0]?.n ?? 0) };
  }
}
