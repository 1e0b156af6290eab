import type { SqlExecutor } from './executor.js';
import type { Page, PageQuery } from '../types.js';

/**
 * Cursor pagination over one table, shared by every list: rows ordered by id (ids are time-ordered), the
 * cursor is the last id the client saw, one extra row tells `has_more`. `where` and `params` carry the
 * caller's filters (account scoping included).
 */
export async function paginate<Row, T>(
  db: SqlExecutor,
  table: string,
  where: string[],
  params: unknown[],
  page: PageQuery,
  map: (row: Row) => T,
): Promise<Page<T>> {
  const clauses = [...where];
  const args = [...params];
  const filter = clauses.length ? `WHERE ${clauses.join(' AND ')}` : '';
  let totalCount: number | undefined;
  if (page.includeTotalCount) {
    const { rows } = await db.query<{ n: number }>(`SELECT COUNT(*) AS n FROM ${table} ${filter}`, args);
    totalCount = Number(rows[0]!.n);
  }
  if (page.startingAfter) {
    clauses.push('id > ?');
    args.push(page.startingAfter);
  }
  const pageFilter = clauses.length ? `WHERE ${clauses.join(' AND ')}` : '';
  const { rows } = await db.query<Row>(`SELECT * FROM ${table} ${pageFilter} ORDER BY id LIMIT ?`, [...args, page.limit + 1]);
  const hasMore = rows.length > page.limit;
  return { items: rows.slice(0, page.limit).map(map), hasMore, totalCount };
}
