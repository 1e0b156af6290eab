// Scenario runs a page at a time, polled while any is open: state, score, each scoring function's result,
// the box it runs in, and the actions that move it on (score and complete, cancel).
import type { ScenarioRunView, ScenarioView } from '@runloop/api-client/resources/scenarios/scenarios';
import { useEffect, useRef, useState } from 'preact/hooks';
import { get, page, post } from '../../api';
import { Action, ErrorNote, Status } from '../../ui/common';
import { useInterval, useLoad } from '../../ui/use-load';

const OPEN = new Set(['running', 'scoring', 'scored']);
const LIMIT = 50;

export function score(v: number | null | undefined): string {
  return v === null || v === undefined ? '—' : v.toFixed(2);
}

export function duration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return '—';
  const s = Math.round(ms / 1000);
  return s < 60 ? `${s} s` : `${Math.floor(s / 60)} min ${s % 60} s`;
}

/** Scenario names for ids, each fetched once per page view (a run names only its scenario's id). */
function useScenarioNames(ids: string[], known?: Map<string, string>): Map<string, string> {
  const cache = useRef(new Map<string, string>(known));
  const [, setTick] = useState(0);
  useEffect(() => {
    const missing = [...new Set(ids)].filter((id) => !cache.current.has(id));
    for (const id of missing) cache.current.set(id, id);
    if (missing.length === 0) return;
    void Promise.all(
      missing.map((id) =>
        get<ScenarioView>(`/v1/scenarios/${id}`).then(
          (s) => cache.current.set(id, s.name),
          () => undefined,
        ),
      ),
    ).then(() => setTick((t) => t + 1));
  }, [ids.join(',')]);
  return cache.current;
}

function ScoringResults({ run }: { run: ScenarioRunView }) {
  const results = run.scoring_contract_result?.scoring_function_results ?? [];
  if (results.length === 0) return <span>—</span>;
  return (
    <details class="scoring">
      <summary>{results.map((r) => `${r.scoring_function_name} ${score(r.score)}${r.state === 'error' ? ' (error)' : ''}`).join(', ')}</summary>
      {results.map((r) => (
        <div key={r.scoring_function_name}>
          <strong>
            {r.scoring_function_name}: {r.state}, score {score(r.score)}
          </strong>
          <pre class="payload">{r.output || '(no output)'}</pre>
        </div>
      ))}
    </details>
  );
}

export interface ScenarioRunsTableProps {
  /** `/v1/benchmark_runs/{id}/scenario_runs` or `/v1/scenarios/runs`. */
  path: string;
  query?: Record<string, string | undefined>;
  /** Poll even when no shown run is open (a benchmark run still starting scenarios). */
  live?: boolean;
  /** Changes to this reload the page (a run started, the benchmark run ended). */
  version?: unknown;
  /** Names already known (the scenario page's own). */
  names?: Map<string, string>;
  empty: string;
  /** Adds a column linking each run's benchmark run (runs listed by scenario). */
  showBenchmarkRun?: boolean;
}

export function ScenarioRunsTable(props: ScenarioRunsTableProps) {
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const [acted, setActed] = useState(0);
  const cursor = cursors[cursors.length - 1];
  const queryKey = JSON.stringify(props.query ?? {});
  const { data, error, reload } = useLoad(
    () => page<ScenarioRunView>(props.path, 'runs', { limit: LIMIT, starting_after: cursor, ...props.query }),
    [props.path, queryKey, cursor, props.version, acted],
  );
  const rows = data?.items ?? [];
  const open = rows.some((r) => OPEN.has(r.state));
  useInterval(reload, props.live || open ? 1500 : null);
  const names = useScenarioNames(
    rows.map((r) => r.scenario_id),
    props.names,
  );
  if (error && !data) return <ErrorNote error={error} />;
  if (!data) return <p aria-busy="true">Loading scenario runs…</p>;
  if (rows.length === 0 && cursors.length === 1) return <p>{props.empty}</p>;
  const done = () => setActed((n) => n + 1);
  return (
    <div>
      <ErrorNote error={error} />
      <div class="table-wrap">
        <table class="striped">
          <thead>
            <tr>
              <th scope="col">Scenario</th>
              <th scope="col">State</th>
              <th scope="col">Score</th>
              <th scope="col">Scoring functions</th>
              {props.showBenchmarkRun && <th scope="col">Benchmark run</th>}
              <th scope="col">Devbox</th>
              <th scope="col">Duration</th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((r) => (
              <tr key={r.id}>
                <td>
                  <a href={`/scenarios?id=${r.scenario_id}`}>{names.get(r.scenario_id) ?? r.scenario_id}</a>
                </td>
                <td>
                  <Status value={r.state} />
                </td>
                <td>{score(r.scoring_contract_result?.score)}</td>
                <td>
                  <ScoringResults run={r} />
                </td>
                {props.showBenchmarkRun && (
                  <td>{r.benchmark_run_id ? <a href={`/benchmark-runs/${r.benchmark_run_id}`}>{r.name || r.benchmark_run_id}</a> : 'single run'}</td>
                )}
                <td>
                  <a href={`/devboxes/${r.devbox_id}`}>
                    <code>{r.devbox_id}</code>
                  </a>
                </td>
                <td>{duration(r.duration_ms)}</td>
                <td>
                  <div class="run-actions">
                    {(r.state === 'running' || r.state === 'scored') && (
                      <Action label="Score and complete" run={() => post(`/v1/scenarios/runs/${r.id}/complete`)} done={done} />
                    )}
                    {OPEN.has(r.state) && (
                      <Action
                        label="Cancel"
                        variant="secondary"
                        confirm="Cancel this scenario run? Its devbox shuts down."
                        run={() => post(`/v1/scenarios/runs/${r.id}/cancel`)}
                        done={done}
                      />
                    )}
                  </div>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <nav class="pager" aria-label="Scenario run pages">
        <small>
          {(cursors.length - 1) * LIMIT + 1}–{(cursors.length - 1) * LIMIT + rows.length}
          {data.total !== null ? ` of ${data.total}` : ''}
        </small>
        <button type="button" class="secondary outline" disabled={cursors.length === 1} onClick={() => setCursors(cursors.slice(0, -1))}>
          Previous
        </button>
        <button type="button" class="secondary outline" disabled={!data.hasMore} onClick={() => setCursors([...cursors, rows[rows.length - 1]!.id])}>
          Next
        </button>
      </nav>
    </div>
  );
}
