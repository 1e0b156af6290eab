import { DomainError, ERRORS } from '../../platform/errors.js';
import type { SqlExecutor } from '../../platform/store/sql/executor.js';
import { paginate } from '../../platform/store/sql/paginate.js';
import { nameFilters } from '../../platform/store/sql/name-filter.js';
import type { Page, PageQuery } from '../../platform/store/types.js';
import type { Benchmark, BenchmarkListFilter } from './types.js';

interface Row {
  id: string;
  account_id: string;
  name: string;
  is_public: number;
  status: 'active' | 'archived';
  attribution: string | null;
  description: string | null;
  metadata: string;
  required_env: string;
  required_secrets: string;
  scenario_ids: string;
  create_time_ms: number;
  update_time_ms: number;
}

const fromRow = (r: Row): Benchmark => ({
  id: r.id,
  accountId: r.account_id,
  name: r.name,
  isPublic: Boolean(Number(r.is_public)),
  status: r.status,
  attribution: r.attribution,
  description: r.description,
  metadata: JSON.parse(r.metadata) as Record<string, string>,
  requiredEnvironmentVariables: JSON.parse(r.required_env) as string[],
  requiredSecretNames: JSON.parse(r.required_secrets) as string[],
  scenarioIds: JSON.parse(r.scenario_ids) as string[],
  createTimeMs: Number(r.create_time_ms),
  updateTimeMs: Number(r.update_time_ms),
});

/** The benchmarks table over either dialect; built over `store.db` (or a transaction's `tx.db`). */
export class SqlBenchmarkStore {
  constructor(private readonly db: SqlExecutor) {}

  async insert(b: Benchmark): Promise<void> {
    await this.nameTaken(b.name, () =>
      this.db.query(
        `INSERT INTO benchmarks (id, account_id, name, is_public, status, attribution, description, metadata, required_env, required_secrets,
           scenario_ids, create_time_ms, update_time_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        [
          b.id,
          b.accountId,
          b.name,
          b.isPublic ? 1 : 0,
          b.status,
          b.attribution,
          b.description,
          JSON.stringify(b.metadata),
          JSON.stringify(b.requiredEnvironmentVariables),
          JSON.stringify(b.requiredSecretNames),
          JSON.stringify(b.scenarioIds),
          b.createTimeMs,
          b.updateTimeMs,
        ],
      ),
    );
  }

  /** The account's own benchmark, or a public one. */
  async get(accountId: string, id: string): Promise<Benchmark | undefined> {
    const { rows } = await this.db.query<Row>('SELECT * FROM benchmarks WHERE id = ? AND (account_id = ? OR is_public = 1)', [id, accountId]);
    return rows[0] && fromRow(rows[0]);
  }

  async getByName(accountId: string, name: string): Promise<Benchmark | undefined> {
    const { rows } = await this.db.query<Row>('SELECT * FROM benchmarks WHERE account_id = ? AND name = ?', [accountId, name]);
    return rows[0] && fromRow(rows[0]);
  }

  async count(accountId: string): Promise<number> {
    const { rows } = await this.db.query<{ n: number }>('SELECT COUNT(*) AS n FROM benchmarks WHERE account_id = ?', [accountId]);
    return Number(rows[0]!.n);
  }

  /** The account's own active benchmarks. */
  list(accountId: string, filter: BenchmarkListFilter, page: PageQuery): Promise<Page<Benchmark>> {
    const where = ['account_id = ?', "status = 'active'"];
    const params: unknown[] = [accountId];
    nameFilters(where, params, filter);
    return paginate<Row, Benchmark>(this.db, 'benchmarks', where, params, page, fromRow);
  }

  /** Every account's public active benchmarks. */
  listPublic(filter: BenchmarkListFilter, page: PageQuery): Promise<Page<Benchmark>> {
    const where = ['is_public = 1', "status = 'active'"];
    const params: unknown[] = [];
    nameFilters(where, params, filter);
    return paginate<Row, Benchmark>(this.db, 'benchmarks', where, params, page, fromRow);
  }

  /** Writes the whole benchmark as the caller merged it, only if nobody changed it since (`seenUpdateMs`). */
  async replace(b: Benchmark, seenUpdateMs: number): Promise<boolean> {
    const { rowCount } = await this.nameTaken(b.name, () =>
      this.db.query(
        `UPDATE benchmarks SET name = ?, attribution = ?, description = ?, metadata = ?, required_env = ?, required_secrets = ?, scenario_ids = ?,
           update_time_ms = ? WHERE id = ? AND account_id = ? AND update_time_ms = ?`,
        [
          b.name,
          b.attribution,
          b.description,
          JSON.stringify(b.metadata),
          JSON.stringify(b.requiredEnvironmentVariables),
          JSON.stringify(b.requiredSecretNames),
          JSON.stringify(b.scenarioIds),
          b.updateTimeMs,
          b.id,
          b.accountId,
          seenUpdateMs,
        ],
      ),
    );
    return rowCount > 0;
  }

  private async nameTaken<T>(name: string, write: () => Promise<T>): Promise<T> {
    try {
      return await write();
    } catch (err) {
      if (err instanceof DomainError && err.code === 'conflict') throw ERRORS.invalid(`name: a benchmark named ${name} already exists`);
      throw err;
    }
  }
}
