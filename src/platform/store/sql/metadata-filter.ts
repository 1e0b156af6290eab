import { marks, type SqlExecutor } from './executor.js';

/** The SDK's metadata list filters: `metadata[k]=v` and `metadata[k][in]=a,b`. */
export interface MetadataFilters {
  metadataEquals?: Record<string, string>;
  metadataIn?: Record<string, string[]>;
}

/**
 * Adds the metadata filters to a list's `where` and `params` for `table`'s JSON `metadata` column. Keys
 * match literally, whatever characters they hold: json_each in SQLite, ->> in PostgreSQL.
 */
export function whereMetadata(db: SqlExecutor, table: string, f: MetadataFilters, where: string[], params: unknown[]): void {
  const valueOf =
    db.dialect === 'postgres'
      ? (op: string) => `(metadata::jsonb ->> ?::text) ${op}`
      : (op: string) => `EXISTS (SELECT 1 FROM json_each(${table}.metadata) m WHERE m.key = ? AND m.value ${op})`;
  for (const [k, v] of Object.entries(f.metadataEquals ?? {})) {
    where.push(valueOf('= ?'));
    params.push(k, v);
  }
  for (const [k, values] of Object.entries(f.metadataIn ?? {})) {
    if (values.length === 0) {
      where.push('1 = 0');
      continue;
    }
    where.push(valueOf(`IN (${marks(values)})`));
    params.push(k, ...values);
  }
}
