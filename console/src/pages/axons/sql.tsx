// The axon's SQL database: one statement (with ? parameters) or a batch run as one transaction.
import type { SqlBatchResultView, SqlQueryResultView } from '@runloop/api-client/resources/axons/sql';
import { useState } from 'preact/hooks';
import { post } from '../../api';
import { ErrorNote } from '../../ui/common';
import { useSubmit } from '../../ui/use-submit';
import { splitStatements } from './sql-split';

type Outcome = { kind: 'query'; result: SqlQueryResultView } | { kind: 'batch'; statements: string[]; result: SqlBatchResultView };

function cell(v: unknown): string {
  if (v === null || v === undefined) return 'NULL';
  return typeof v === 'object' ? JSON.stringify(v) : String(v);
}

function ResultTable({ result }: { result: SqlQueryResultView }) {
  const { meta } = result;
  const summary = [
    `${result.rows.length} row${result.rows.length === 1 ? '' : 's'}`,
    meta.changes ? `${meta.changes} changed` : '',
    `${meta.duration_ms < 10 ? meta.duration_ms.toFixed(2) : Math.round(meta.duration_ms)} ms`,
    meta.rows_read_limit_reached ? 'truncated at the row limit' : '',
  ].filter(Boolean);
  return (
    <div>
      <p>
        <small>{summary.join(' · ')}</small>
      </p>
      {result.columns.length > 0 && (
        <div class="table-wrap">
          <table class="striped sql-result">
            <thead>
              <tr>
                {result.columns.map((c, i) => (
                  <th key={i} scope="col">
                    {c.name}
                    {c.type ? <small> {c.type}</small> : null}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {result.rows.map((row, r) => (
                <tr key={r}>
                  {(row as unknown[]).map((v, i) => (
                    <td key={i} class={v === null ? 'null' : undefined}>
                      {cell(v)}
                    </td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </div>
  );
}

function parseParams(text: string): unknown[] | undefined {
  if (!text.trim()) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new Error('Parameters must be a JSON array, e.g. [1, "a"]');
  }
  if (!Array.isArray(parsed)) throw new Error('Parameters must be a JSON array, e.g. [1, "a"]');
  return parsed;
}

export function SqlPanel({ id }: { id: string }) {
  const [sql, setSql] = useState('SELECT 1');
  const [params, setParams] = useState('');
  const [batch, setBatch] = useState(false);
  const [outcome, setOutcome] = useState<Outcome | null>(null);
  const submit = useSubmit();
  const execute = (e: Event | null) =>
    submit.run(e, async () => {
      setOutcome(null);
      if (batch) {
        const statements = splitStatements(sql);
        const result = await post<SqlBatchResultView>(`/v1/axons/${id}/sql/batch`, { statements: statements.map((s) => ({ sql: s })) });
        setOutcome({ kind: 'batch', statements, result });
      } else {
        const result = await post<SqlQueryResultView>(`/v1/axons/${id}/sql/query`, { sql, params: parseParams(params) });
        setOutcome({ kind: 'query', result });
      }
    });
  return (
    <div>
      <form onSubmit={execute} aria-label="Run SQL">
        <label>
          SQL {batch ? '(statements separated by ;, run as one transaction)' : '(one statement; Ctrl+Enter runs it)'}
          <textarea
            rows={4}
            class="mono"
            value={sql}
            onInput={(e) => setSql(e.currentTarget.value)}
            onKeyDown={(e) => {
              if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) void execute(e);
            }}
          />
        </label>
        {!batch && (
          <label>
            Parameters (optional JSON array for the ? placeholders)
            <input class="mono" value={params} onInput={(e) => setParams(e.currentTarget.value)} placeholder='[42, "text"]' />
          </label>
        )}
        <label>
          <input type="checkbox" role="switch" aria-checked={batch} checked={batch} onChange={(e) => setBatch(e.currentTarget.checked)} />
          Batch: several statements in one transaction
        </label>
        <ErrorNote error={submit.error} />
        <div class="form-row">
          <button type="submit" aria-busy={submit.busy} disabled={submit.busy}>
            Run
          </button>
        </div>
      </form>
      <div aria-live="polite">
        {outcome?.kind === 'query' && <ResultTable result={outcome.result} />}
        {outcome?.kind === 'batch' &&
          outcome.result.results.map((step, i) => (
            <article key={i} class="sql-step">
              <p>
                <code>{outcome.statements[i]}</code>
              </p>
              {step.error ? <ErrorNote error={step.error.message} /> : step.success ? <ResultTable result={step.success} /> : null}
            </article>
          ))}
      </div>
    </div>
  );
}
