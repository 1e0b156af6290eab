// One benchmark run, followed live: its state and score, and each scenario run's state and score as they
// change (polled every 1.5 s while the run is open), with cancel and complete while it runs.
import type { BenchmarkRunView } from '@runloop/api-client/resources/benchmark-runs';
import type { BenchmarkView } from '@runloop/api-client/resources/benchmarks';
import { get, post } from '../../api';
import { Action, ErrorNote, Fields, Header, Status, Time } from '../../ui/common';
import { KeyValues } from '../../ui/key-values';
import { useInterval, useLoad } from '../../ui/use-load';
import { duration, ScenarioRunsTable, score } from '../scenarios/runs-table';

export default function BenchmarkRun({ id }: { id: string }) {
  const { data: run, error, reload } = useLoad((signal) => get<BenchmarkRunView>(`/v1/benchmark_runs/${id}`, undefined, signal), [id]);
  const running = run?.state === 'running';
  useInterval(reload, running ? 1500 : null);
  const benchmarkId = run?.benchmark_id;
  const benchmark = useLoad(
    (signal) => (benchmarkId ? get<BenchmarkView>(`/v1/benchmarks/${benchmarkId}`, undefined, signal) : Promise.resolve(undefined)),
    [benchmarkId],
  );
  if (error && !run)
    return (
      <section>
        <Header title="Benchmark run" />
        <ErrorNote error={error} />
        <a href="/benchmarks">Back to benchmarks</a>
      </section>
    );
  if (!run) return <p aria-busy="true">Loading the run…</p>;
  const b = benchmark.data;
  return (
    <section>
      <Header title={run.name || `Run ${run.id}`}>
        {running && (
          <>
            <Action
              label="Score and complete all"
              variant="secondary"
              confirm="Score every open scenario run now and complete the run?"
              run={() => post(`/v1/benchmark_runs/${id}/complete`)}
              done={reload}
            />
            <Action
              label="Cancel run"
              variant="secondary"
              confirm="Cancel this run? Its open scenario runs end and their devboxes shut down."
              run={() => post(`/v1/benchmark_runs/${id}/cancel`)}
              done={reload}
            />
          </>
        )}
      </Header>
      <p>{b ? <a href={`/benchmarks/${b.id}`}>Benchmark {b.name}</a> : <a href="/benchmarks">All benchmarks</a>}</p>
      <ErrorNote error={error} />
      <Fields
        rows={[
          ['State', <Status value={run.state} />],
          ['Score', run.state === 'running' ? `${score(run.score)} (set when the run ends)` : score(run.score)],
          ['Started', <Time ms={run.start_time_ms} />],
          ['Duration', duration(run.duration_ms)],
          ['Id', <code>{run.id}</code>],
          ['Purpose', run.purpose || '—'],
          ['Environment', <KeyValues map={run.environment_variables} />],
          ['Metadata', <KeyValues map={run.metadata} />],
        ]}
      />
      <h2>Scenarios</h2>
      {running && (
        <p>
          Each scenario runs in a devbox of its own (at most a few at once; the next start as others end). Let your agent work in a box, or open it and fix it
          yourself, then <strong>Score and complete</strong> its row: its scorers run and its score appears here. The run ends once every scenario run ended.
        </p>
      )}
      <ScenarioRunsTable
        path={`/v1/benchmark_runs/${id}/scenario_runs`}
        live={running}
        version={`${run.state}:${run.score}`}
        empty={running ? 'Starting the first scenarios…' : 'This run has no scenario runs.'}
      />
      {b && <p>{`${b.scenarioIds.length} scenario${b.scenarioIds.length === 1 ? '' : 's'} in the benchmark.`}</p>}
    </section>
  );
}
