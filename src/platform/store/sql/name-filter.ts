/**
 * The `name` and `search` list filters most resources share, written once (each store had its own copy):
 * `name` keeps the rows whose name contains it, `search` the row with that exact id or whose name contains
 * it, both ignoring case. LIKE folds case on SQLite and not on PostgreSQL, so the column is lowered in SQL and
 * the pattern here; `%`, `_` and `\` the client sent match themselves (escaped, ESCAPE '\').
 */

/** A LIKE pattern for names that contain `s`, lowered. */
export const likeContains = (s: string): string => `%${s.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/** Adds `search`: an exact id, or a name that contains it. */
export function searchFilter(where: string[], params: unknown[], search: string | undefined): void {
  if (!search) return;
  where.push("(id = ? OR LOWER(name) LIKE ? ESCAPE '\\')");
  params.push(search, likeContains(search));
}

/** Adds `name` (contained, any case) and `search` (see searchFilter) to a list's WHERE clauses. */
export function nameFilters(where: string[], params: unknown[], f: { name?: string; search?: string }): void {
  if (f.name) {
    where.push("LOWER(name) LIKE ? ESCAPE '\\'");
    params.push(likeContains(f.name));
  }
  searchFilter(where, params, f.search);
}
