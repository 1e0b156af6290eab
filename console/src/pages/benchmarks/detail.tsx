// One benchmark: what it is, a form to start a run, its scores across runs as a chart, its runs and its
// scenarios.
import type { BenchmarkRunListView, BenchmarkRunView } from '@runloop/api-client/resources/benchmark-runs';
import type { BenchmarkView } from '@runloop/api-client/resources/benchmarks';
import type { ScenarioView } from '@runloop/api-client/resources/scenarios/scenarios';
import type { ComponentType } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { get } from '../../api';
import { ErrorNote, Fields, Header, Status, Time } from '../../ui/common';
import { KeyValues } from '../../ui/key-values';
import { PagedTable } from '../../ui/paged-table';
import { useLoad } from '../../ui/use-load';
import { duration, score } from '../scenarios/runs-table';
import type { ScoredRun } from './scores-chart';
import { StartRunForm } from './start-run';

/** Runs the chart draws: one page, the oldest first (lists page in id order, which is start order). */
const CHART_RUNS = 1000;

function ScoresOverTime({ id }: { id: string }) {
  const { data, error } = useLoad(
    (signal) => get<BenchmarkRunListView>('/v1/benchmark_runs', { benchmark_id: id, limit: CHART_RUNS, include_total_count: false }, signal),
    [id],
  );
  const [Chart, setChart] = useState<ComponentType<{ runs: ScoredRun[] }> | null>(null);
  const scored: ScoredRun[] = (data?.runs ?? [])
    .filter((r) => typeof r.score === 'number')
    .map((r) => ({ startMs: r.start_time_ms, score: r.score as number, name: r.name ?? r.id }));
  useEffect(() => {
    if (scored.length > 0 && !Chart) void import('./scores-chart').then((m) => setChart(() => m.default));
  }, [scored.length > 0]);
  if (error) return <ErrorNote error={error} />;
  if (!data) return <p aria-busy="true">Loading runs…</p>;
  if (scored.length === 0) return <p>No scored run yet: once a run completes, its score appears here, one point per run.</p>;
  const best = Math.max(...scored.map((r) => r.score));
  const last = scored[scored.length - 1]!;
  return (
    <figure>
      {Chart ? <Chart runs={scored} /> : <p aria-busy="true">Loading the chart…</p>}
      <figcaption>
        {scored.length} scored run{scored.length === 1 ? '' : 's'}
        {data.has_more ? ` (the first ${CHART_RUNS})` : ''}; latest {score(last.score)} ({last.name}), best {score(best)}.
      </figcaption>
    </figure>
  );
}

export default function BenchmarkDetail({ id }: { id: string }) {
  const { data: b, error } = useLoad((signal) => get<BenchmarkView>(`/v1/benchmarks/${id}`, undefined, signal), [id]);
  if (error)
    return (
      <section>
        <Header title="Benchmark" />
        <ErrorNote error={error} />
        <a href="/benchmarks">Back to benchmarks</a>
      </section>
    );
  if (!b) return <p aria-busy="true">Loading the benchmark…</p>;
  return (
    <section>
      <Header title={b.name} />
      <p>
        <a href="/benchmarks">All benchmarks</a>
      </p>
      {b.description && <p>{b.description}</p>}
      <Fields
        rows={[
          ['Id', <code>{b.id}</code>],
          ['Scenarios', String(b.scenarioIds.length)],
          ['Visibility', b.is_public ? 'public: every account can run it' : 'yours'],
          ['Attribution', b.attribution || '—'],
          ['Required variables', b.required_environment_variables?.join(', ') || '—'],
          ['Required secrets', b.required_secret_names?.join(', ') || '—'],
          ['Metadata', <KeyValues map={b.metadata} />],
        ]}
      />
      <h2>Start a run</h2>
      <StartRunForm benchmark={b} />
      <h2>Scores across runs</h2>
      <ScoresOverTime id={id} />
      <h2>Runs</h2>
      <PagedTable<BenchmarkRunView>
        label="runs of this benchmark"
        path="/v1/benchmark_runs"
        itemsKey="runs"
        query={{ benchmark_id: id }}
        columns={[
          { title: 'Run', cell: (r) => <a href={`/benchmark-runs/${r.id}`}>{r.name || r.id}</a> },
          { title: 'State', cell: (r) => <Status value={r.state} /> },
          { title: 'Score', cell: (r) => score(r.score) },
          { title: 'Started', cell: (r) => <Time ms={r.start_time_ms} /> },
          { title: 'Duration', cell: (r) => duration(r.duration_ms) },
        ]}
        empty={<p>This benchmark has not run yet: start a run above.</p>}
      />
      <h2>Scenarios</h2>
      <PagedTable<ScenarioView>
        label="scenarios of this benchmark"
        path={`/v1/benchmarks/${id}/definitions`}
        itemsKey="scenarios"
        columns={[
          { title: 'Scenario', cell: (s) => <a href={`/scenarios?id=${s.id}`}>{s.name}</a> },
          { title: 'Problem statement', cell: (s) => <span class="clamp">{s.input_context.problem_statement}</span> },
          {
            title: 'Scored by',
            cell: (s) => s.scoring_contract.scoring_function_parameters.map((f) => `${f.name} (${f.scorer.type.replace(/_/g, ' ')})`).join(', '),
          },
        ]}
        empty={<p>This benchmark has no scenarios: add some with the SDK's benchmarks.updateScenarios.</p>}
      />
    </section>
  );
}
