import { whereMetadata } from '../../platform/store/sql/metadata-filter.js';
import type { SqlExecutor } from '../../platform/store/sql/executor.js';
import { marks } from '../../platform/store/sql/executor.js';
import { paginate } from '../../platform/store/sql/paginate.js';
import type { Page, PageQuery } from '../../platform/store/types.js';
import type { Axon, AxonEvent, AxonFilters, Origin } from './types.js';

interface AxonRow {
  id: string;
  account_id: string;
  name: string | null;
  metadata: string;
  created_at_ms: number;
  deleted_at_ms: number | null;
  last_sequence: number;
}

interface EventRow {
  axon_id: string;
  sequence: number;
  event_type: string;
  origin: string;
  payload: string;
  source: string;
  timestamp_ms: number;
}

const fromRow = (r: AxonRow): Axon => ({
  id: r.id,
  accountId: r.account_id,
  name: r.name,
  metadata: JSON.parse(r.metadata) as Record<string, string>,
  createdAtMs: Number(r.created_at_ms),
  deletedAtMs: r.deleted_at_ms === null ? null : Number(r.deleted_at_ms),
  lastSequence: Number(r.last_sequence),
});

export const eventFromRow = (r: EventRow): AxonEvent => ({
  axonId: r.axon_id,
  sequence: Number(r.sequence),
  eventType: r.event_type,
  origin: r.origin as Origin,
  payload: r.payload,
  source: r.source,
  timestampMs: Number(r.timestamp_ms),
});

export interface AppendItem {
  accountId: string;
  id: string;
  event: Omit<AxonEvent, 'axonId' | 'sequence'>;
}

/** Escapes LIKE wildcards so a name filter matches literally. */
const likeLiteral = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`);

/** The axon tables over either dialect. */
export class SqlAxonStore {
  constructor(private readonly db: SqlExecutor) {}

  async insert(a: Axon): Promise<void> {
    await this.db.query('INSERT INTO axons (id, account_id, name, metadata, created_at_ms, deleted_at_ms, last_sequence) VALUES (?, ?, ?, ?, ?, NULL, 0)', [
      a.id,
      a.accountId,
      a.name,
      JSON.stringify(a.metadata),
      a.createdAtMs,
    ]);
  }

  async countActive(accountId: string): Promise<number> {
    const { rows } = await this.db.query<{ n: number | string }>('SELECT COUNT(*) AS n FROM axons WHERE account_id = ? AND deleted_at_ms IS NULL', [accountId]);
    return Number(rows[0]!.n);
  }

  /** Deleted axons included. */
  async get(accountId: string, id: string): Promise<Axon | undefined> {
    const { rows } = await this.db.query<AxonRow>('SELECT * FROM axons WHERE account_id = ? AND id = ?', [accountId, id]);
    return rows[0] && fromRow(rows[0]);
  }

  /** Active axons only. */
  list(accountId: string, page: PageQuery, f: AxonFilters): Promise<Page<Axon>> {
    const where = ['account_id = ?', 'deleted_at_ms IS NULL'];
    const params: unknown[] = [accountId];
    if (f.id) {
      where.push('id = ?');
      params.push(f.id);
    }
    if (f.name) {
      where.push("name LIKE ? ESCAPE '\\'");
      params.push(`${likeLiteral(f.name)}%`);
    }
    if (f.search) {
      where.push("(id LIKE ? ESCAPE '\\' OR name LIKE ? ESCAPE '\\')");
      const s = `%${likeLiteral(f.search)}%`;
      params.push(s, s);
    }
    whereMetadata(this.db, 'axons', f, where, params);
    return paginate(this.db, 'axons', where, params, page, fromRow);
  }

  /** Replaces the metadata of an active axon; undefined when there is none (missing or deleted). */
  async setMetadata(accountId: string, id: string, metadata: Record<string, string>): Promise<Axon | undefined> {
    const { rows } = await this.db.query<AxonRow>('UPDATE axons SET metadata = ? WHERE account_id = ? AND id = ? AND deleted_at_ms IS NULL RETURNING *', [
      JSON.stringify(metadata),
      accountId,
      id,
    ]);
    return rows[0] && fromRow(rows[0]);
  }

  /** Marks the axon deleted and drops its events; undefined when it was missing or already deleted. */
  async markDeleted(accountId: string, id: string, nowMs: number): Promise<Axon | undefined> {
    return this.db.transaction(async (tx) => {
      const { rows } = await tx.query<AxonRow>('UPDATE axons SET deleted_at_ms = ? WHERE account_id = ? AND id = ? AND deleted_at_ms IS NULL RETURNING *', [
        nowMs,
        accountId,
        id,
      ]);
      if (!rows[0]) return undefined;
      await tx.query('DELETE FROM axon_events WHERE axon_id = ?', [id]);
      return fromRow(rows[0]);
    });
  }

  /**
   * Appends events, each to its axon, in one transaction (one commit, one fsync for all): the sequence comes
   * from the axon's row, incremented here (its row lock orders concurrent publishes on any server), and events
   * beyond the newest `keep` go. Undefined in place of an event whose axon is missing or deleted.
   */
  async appendAll(items: readonly AppendItem[], keep: number): Promise<(AxonEvent | undefined)[]> {
    return this.db.transaction(async (tx) => {
      const out: (AxonEvent | undefined)[] = [];
      for (const { accountId, id, event: e } of items) {
        const { rows } = await tx.query<{ last_sequence: number }>(
          'UPDATE axons SET last_sequence = last_sequence + 1 WHERE account_id = ? AND id = ? AND deleted_at_ms IS NULL RETURNING last_sequence',
          [accountId, id],
        );
        if (!rows[0]) {
          out.push(undefined);
          continue;
        }
        const sequence = Number(rows[0].last_sequence);
        await tx.query('INSERT INTO axon_events (axon_id, sequence, event_type, origin, payload, source, timestamp_ms) VALUES (?, ?, ?, ?, ?, ?, ?)', [
          id,
          sequence,
          e.eventType,
          e.origin,
          e.payload,
          e.source,
          e.timestampMs,
        ]);
        if (sequence > keep) await tx.query('DELETE FROM axon_events WHERE axon_id = ? AND sequence <= ?', [id, sequence - keep]);
        out.push({ axonId: id, sequence, ...e });
      }
      return out;
    });
  }

  /** Events with afterSequence < sequence <= upTo (when given), oldest first, at most `limit`. */
  async eventsAfter(id: string, afterSequence: number, limit: number, upTo?: number): Promise<AxonEvent[]> {
    const bound = upTo === undefined ? '' : ' AND sequence <= ?';
    const params = upTo === undefined ? [id, afterSequence, limit] : [id, afterSequence, upTo, limit];
    const { rows } = await this.db.query<EventRow>(`SELECT * FROM axon_events WHERE axon_id = ? AND sequence > ?${bound} ORDER BY sequence LIMIT ?`, params);
    return rows.map(eventFromRow);
  }

  /** Newest first, below `before` when given; one extra row tells has_more. */
  async eventsDescending(id: string, limit: number, before: number | undefined, withTotal: boolean): Promise<{ events: AxonEvent[]; hasMore: boolean; total?: number }> {
    const bound = before === undefined ? '' : ' AND sequence < ?';
    const params = before === undefined ? [id, limit + 1] : [id, before, limit + 1];
    const { rows } = await this.db.query<EventRow>(`SELECT * FROM axon_events WHERE axon_id = ?${bound} ORDER BY sequence DESC LIMIT ?`, params);
    const count = withTotal ? await this.db.query<{ n: number }>('SELECT COUNT(*) AS n FROM axon_events WHERE axon_id = ?', [id]) : undefined;
    return { events: rows.slice(0, limit).map(eventFromRow), hasMore: rows.length > limit, total: count && Number(count.rows[0]!.n) };
  }

  /** The newest sequence of each axon named (for the cross-server catch-up). */
  async lastSequences(ids: readonly string[]): Promise<Map<string, number>> {
    if (ids.length === 0) return new Map();
    const { rows } = await this.db.query<{ id: string; last_sequence: number }>(`SELECT id, last_sequence FROM axons WHERE id IN (${marks(ids)})`, ids);
    return new Map(rows.map((r) => [r.id, Number(r.last_sequence)]));
  }
}
