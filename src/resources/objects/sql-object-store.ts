import { marks, type SqlExecutor } from '../../platform/store/sql/executor.js';
import { paginate } from '../../platform/store/sql/paginate.js';
import { nameFilters } from '../../platform/store/sql/name-filter.js';
import type { Page, PageQuery } from '../../platform/store/types.js';
import type { ContentType, ObjectListFilter, ObjectState, StoredObject } from './types.js';

interface Row {
  id: string;
  account_id: string;
  name: string;
  content_type: ContentType;
  state: ObjectState;
  metadata: string;
  size_bytes: number | string | null;
  create_time_ms: number | string;
  delete_after_time_ms: number | string | null;
  is_public: number;
  blob_key: string | null;
}

const fromRow = (r: Row): StoredObject => ({
  id: r.id,
  accountId: r.account_id,
  name: r.name,
  contentType: r.content_type,
  state: r.state,
  metadata: JSON.parse(r.metadata) as Record<string, string>,
  sizeBytes: r.size_bytes === null ? null : Number(r.size_bytes),
  createTimeMs: Number(r.create_time_ms),
  deleteAfterTimeMs: r.delete_after_time_ms === null ? null : Number(r.delete_after_time_ms),
  isPublic: Number(r.is_public) === 1,
  blobKey: r.blob_key,
});

const COLUMNS = [
  'id',
  'account_id',
  'name',
  'content_type',
  'state',
  'metadata',
  'size_bytes',
  'create_time_ms',
  'delete_after_time_ms',
  'is_public',
  'blob_key',
];

/** The objects table over either dialect; every state change is conditional on the state it leaves. */
export class SqlObjectStore {
  constructor(private readonly db: SqlExecutor) {}

  async insert(o: StoredObject): Promise<void> {
    await this.db.query(`INSERT INTO objects (${COLUMNS.join(', ')}) VALUES (${marks(COLUMNS)})`, [
      o.id,
      o.accountId,
      o.name,
      o.contentType,
      o.state,
      JSON.stringify(o.metadata),
      o.sizeBytes,
      o.createTimeMs,
      o.deleteAfterTimeMs,
      o.isPublic ? 1 : 0,
      o.blobKey,
    ]);
  }

  async getById(id: string): Promise<StoredObject | undefined> {
    const { rows } = await this.db.query<Row>('SELECT * FROM objects WHERE id = ?', [id]);
    return rows[0] && fromRow(rows[0]);
  }

  /** Lists the account's objects (`accountId`), or every account's public ones (`accountId` null). */
  list(accountId: string | null, filter: ObjectListFilter, page: PageQuery, nowMs: number): Promise<Page<StoredObject>> {
    const where = accountId === null ? ['is_public = 1'] : ['account_id = ?'];
    const params: unknown[] = accountId === null ? [] : [accountId];
    // Objects past their time are gone for readers, whether or not cleanup ran; deleted ones too.
    where.push("state <> 'DELETED'", '(delete_after_time_ms IS NULL OR delete_after_time_ms > ?)');
    params.push(nowMs);
    if (filter.contentType) {
      where.push('content_type = ?');
      params.push(filter.contentType);
    }
    if (filter.state) {
      where.push('state = ?');
      params.push(filter.state);
    }
    nameFilters(where, params, filter);
    return paginate<Row, StoredObject>(this.db, 'objects', where, params, page, fromRow);
  }

  /**
   * Records the blob of a finished PUT while the object is UPLOADING, unless a PUT that started later (a
   * greater key: put ids are time-ordered) already did; false when it did not apply. Its size is kept, so
   * bytes uploaded but never completed count against the account's storage.
   */
  async attachBlob(id: string, key: string, sizeBytes: number): Promise<boolean> {
    const { rowCount } = await this.db.query(
      "UPDATE objects SET blob_key = ?, size_bytes = ? WHERE id = ? AND state = 'UPLOADING' AND (blob_key IS NULL OR blob_key < ?)",
      [key, sizeBytes, id, key],
    );
    return rowCount > 0;
  }

  /** UPLOADING → READ_ONLY with the size of `key`, only if `key` is still its blob; false otherwise. */
  async complete(id: string, key: string, sizeBytes: number): Promise<boolean> {
    const { rowCount } = await this.db.query("UPDATE objects SET state = 'READ_ONLY', size_bytes = ? WHERE id = ? AND state = 'UPLOADING' AND blob_key = ?", [
      sizeBytes,
      id,
      key,
    ]);
    return rowCount > 0;
  }

  /** The account's objects (any state but DELETED) and the bytes they hold, `except` one of them. */
  async usage(accountId: string, except: string | null = null): Promise<{ objects: number; bytes: number }> {
    const { rows } = await this.db.query<{ n: number | string; b: number | string | null }>(
      "SELECT COUNT(*) AS n, SUM(size_bytes) AS b FROM objects WHERE account_id = ? AND state <> 'DELETED' AND id <> ?",
      [accountId, except ?? ''],
    );
    return { objects: Number(rows[0]?.n ?? 0), bytes: Number(rows[0]?.b ?? 0) };
  }

  /** Marks the object DELETED (from any other state); false when it already was, or is gone. */
  async markDeleted(id: string): Promise<boolean> {
    const { rowCount } = await this.db.query("UPDATE objects SET state = 'DELETED' WHERE id = ? AND state <> 'DELETED'", [id]);
    return rowCount > 0;
  }

  async remove(id: string): Promise<void> {
    await this.db.query('DELETE FROM objects WHERE id = ?', [id]);
  }

  /** Objects a delete marked but did not remove (the server stopped in between). */
  async listDeleted(): Promise<StoredObject[]> {
    const { rows } = await this.db.query<Row>("SELECT * FROM objects WHERE state = 'DELETED'");
    return rows.map(fromRow);
  }

  async setPublic(id: string, isPublic: boolean): Promise<boolean> {
    const { rowCount } = await this.db.query('UPDATE objects SET is_public = ? WHERE id = ?', [isPublic ? 1 : 0, id]);
    return rowCount > 0;
  }
}
