// A list the server pages: one page of `limit` rows at a time, next and previous by `starting_after`
// cursors, never the whole account (the first page of 1000 boxes is one small request).
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { page } from '../api';
import { Empty, ErrorNote } from './common';
import { useLoad } from './use-load';

export interface Column<T> {
  title: string;
  cell: (row: T) => ComponentChildren;
}

export interface PagedTableProps<T> {
  /** What the table lists, for its label ("devboxes"). */
  label: string;
  path: string;
  itemsKey: string;
  columns: Column<T>[];
  query?: Record<string, string | number | boolean | undefined>;
  /** Shown when the first page is empty and no filter is set. */
  empty: ComponentChildren;
  limit?: number;
  /** Changes to this reload the current page (after an action). */
  version?: number;
  rowKey?: (row: T) => string;
}

export function PagedTable<T extends { id?: string | null; name?: string | null }>(props: PagedTableProps<T>) {
  const limit = props.limit ?? 25;
  // Cursors of the pages before this one: the first page has none.
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const queryKey = JSON.stringify(props.query ?? {});
  useEffect(() => setCursors([undefined]), [queryKey, props.path]);
  const cursor = cursors[cursors.length - 1];
  const { data, error, loading } = useLoad(
    () => page<T>(props.path, props.itemsKey, { limit, starting_after: cursor, ...props.query }),
    [props.path, queryKey, cursor, props.version],
  );
  const key = props.rowKey ?? ((r: T) => r.id ?? r.name ?? '');
  if (error) return <ErrorNote error={error} />;
  if (!data) return <p aria-busy="true">Loading {props.label}…</p>;
  const filtered = Object.values(props.query ?? {}).some((v) => v !== undefined && v !== '');
  if (data.items.length === 0 && cursors.length === 1)
    return filtered ? <p>No {props.label} match.</p> : <Empty title={`No ${props.label} yet`}>{props.empty}</Empty>;
  const first = cursors.length === 1;
  const shownFrom = (cursors.length - 1) * limit + 1;
  return (
    <div class="paged" aria-busy={loading}>
      <div class="table-wrap">
        <table class="striped">
          <thead>
            <tr>
              {props.columns.map((c) => (
                <th key={c.title} scope="col">
                  {c.title}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {data.items.map((row) => (
              <tr key={key(row)}>
                {props.columns.map((c) => (
                  <td key={c.title}>{c.cell(row)}</td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <nav class="pager" aria-label={`${props.label} pages`}>
        <small>
          {shownFrom}–{shownFrom + data.items.length - 1}
          {data.total !== null ? ` of ${data.total}` : ''}
        </small>
        <button type="button" class="secondary outline" disabled={first} onClick={() => setCursors(cursors.slice(0, -1))}>
          Previous
        </button>
        <button
          type="button"
          class="secondary outline"
          disabled={!data.hasMore}
          onClick={() => setCursors([...cursors, key(data.items[data.items.length - 1]!)])}
        >
          Next
        </button>
      </nav>
    </div>
  );
}
