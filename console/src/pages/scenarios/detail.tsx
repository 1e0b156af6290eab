// One scenario, readable: the problem the agent gets, the environment it starts in, how it is scored; with
// a single run started from here and the scenario's runs followed live.
import type { ScenarioRunView, ScenarioView } from '@runloop/api-client/resources/scenarios/scenarios';
import { useState } from 'preact/hooks';
import { get, post } from '../../api';
import { Action, ErrorNote, Fields, Status } from '../../ui/common';
import { text } from '../../ui/form-values';
import { KeyValues } from '../../ui/key-values';
import { useLoad } from '../../ui/use-load';
import { useSubmit } from '../../ui/use-submit';
import { ScoringContract } from './contract';
import { ScenarioRunsTable } from './runs-table';

function StartScenarioRun({ scenario, started }: { scenario: ScenarioView; started: (r: ScenarioRunView) => void }) {
  const submit = useSubmit();
  const start = (e: Event) =>
    submit.run(e, async () => {
      const f = new FormData(e.currentTarget as HTMLFormElement);
      started(await post<ScenarioRunView>('/v1/scenarios/start_run', { scenario_id: scenario.id, run_name: text(f, 'run_name') ?? null }));
    });
  return (
    <form onSubmit={start} aria-label="Start a scenario run" class="form-row">
      <label>
        Run name (optional)
        <input name="run_name" />
      </label>
      <button type="submit" aria-busy={submit.busy} disabled={submit.busy || scenario.status === 'archived'}>
        Start a run
      </button>
      {scenario.status === 'archived' && <small>An archived scenario cannot start runs.</small>}
      <ErrorNote error={submit.error} />
    </form>
  );
}

export function ScenarioDetails({ id, onArchived }: { id: string; onArchived: () => void }) {
  const { data: s, error, reload } = useLoad((signal) => get<ScenarioView>(`/v1/scenarios/${id}`, undefined, signal), [id]);
  const [runs, setRuns] = useState(0);
  if (error) return <ErrorNote error={error} />;
  if (!s) return <p aria-busy="true">Loading the scenario…</p>;
  const env = s.environment;
  const launch = env?.launch_parameters?.launch_commands ?? [];
  const extra = s.input_context.additional_context;
  return (
    <article aria-labelledby="scenario-heading">
      <header class="page-header">
        <h2 id="scenario-heading">{s.name}</h2>
        <div class="page-actions">
          <a href="/scenarios">Close</a>
          {!s.is_public && s.status === 'active' && (
            <Action
              label="Archive"
              variant="secondary"
              confirm={`Archive ${s.name}? It leaves the lists and cannot start runs.`}
              run={() => post(`/v1/scenarios/${id}/archive`)}
              done={() => {
                reload();
                onArchived();
              }}
            />
          )}
        </div>
      </header>
      <Fields
        rows={[
          ['Id', <code>{s.id}</code>],
          ['Status', <Status value={s.status} />],
          ['Visibility', s.is_public ? 'public' : 'yours'],
          ['Validation', s.validation_type ?? '—'],
          ['Scorer timeout', s.scorer_timeout_sec ? `${s.scorer_timeout_sec} s` : '—'],
          ['Required variables', s.required_environment_variables?.join(', ') || '—'],
          ['Required secrets', s.required_secret_names?.join(', ') || '—'],
          ['Metadata', <KeyValues map={s.metadata} />],
        ]}
      />
      <h3>Problem statement</h3>
      <blockquote class="statement">{s.input_context.problem_statement}</blockquote>
      {extra !== undefined && extra !== null && (
        <details>
          <summary>Additional context</summary>
          <pre class="payload">{JSON.stringify(extra, null, 2)}</pre>
        </details>
      )}
      <h3>Environment</h3>
      <Fields
        rows={[
          ['Starts from', env?.blueprint_id ? `blueprint ${env.blueprint_id}` : env?.snapshot_id ? `snapshot ${env.snapshot_id}` : 'the default image'],
          ['Working directory', env?.working_directory ? <code>{env.working_directory}</code> : 'home'],
          ['Launch commands', launch.length ? `${launch.length}` : 'none'],
        ]}
      />
      {launch.length > 0 && (
        <details>
          <summary>Launch commands</summary>
          <pre class="payload">{launch.join('\n')}</pre>
        </details>
      )}
      <h3>Scoring contract</h3>
      <ScoringContract functions={s.scoring_contract.scoring_function_parameters} />
      {s.reference_output && (
        <details>
          <summary>Reference output</summary>
          <pre class="payload">{s.reference_output}</pre>
        </details>
      )}
      <h3>Runs of this scenario</h3>
      <StartScenarioRun scenario={s} started={() => setRuns((n) => n + 1)} />
      <ScenarioRunsTable
        path="/v1/scenarios/runs"
        query={{ scenario_id: s.id }}
        version={runs}
        names={new Map([[s.id, s.name]])}
        showBenchmarkRun
        empty="No run of this scenario yet. Start one: a devbox boots with the scenario's environment; work in it, then Score and complete."
      />
    </article>
  );
}
