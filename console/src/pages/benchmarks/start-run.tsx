// Starting a benchmark run: from a list row in one click, or from the benchmark's page with a run name and
// the variables and secrets the benchmark requires.
import type { BenchmarkRunView } from '@runloop/api-client/resources/benchmark-runs';
import type { BenchmarkStartRunParams, BenchmarkView } from '@runloop/api-client/resources/benchmarks';
import { useLocation } from 'preact-iso';
import { post } from '../../api';
import { Action, ErrorNote } from '../../ui/common';
import { text } from '../../ui/form-values';
import { useSubmit } from '../../ui/use-submit';

const startRun = (body: BenchmarkStartRunParams) => post<BenchmarkRunView>('/v1/benchmarks/start_run', body);

function needsInput(b: BenchmarkView): boolean {
  return (b.required_environment_variables?.length ?? 0) > 0 || (b.required_secret_names?.length ?? 0) > 0;
}

/** A row's button: starts at once, or sends to the benchmark's page when it needs variables or secrets. */
export function StartRunButton({ benchmark }: { benchmark: BenchmarkView }) {
  const { route } = useLocation();
  if (needsInput(benchmark))
    return (
      <a href={`/benchmarks/${benchmark.id}`} aria-label={`Start ${benchmark.name} from its page (it needs variables or secrets)`}>
        Start from its page
      </a>
    );
  return <Action label="Start a run" run={async () => route(`/benchmark-runs/${(await startRun({ benchmark_id: benchmark.id })).id}`)} />;
}

export function StartRunForm({ benchmark }: { benchmark: BenchmarkView }) {
  const { route } = useLocation();
  const submit = useSubmit();
  const envNames = benchmark.required_environment_variables ?? [];
  const secretNames = benchmark.required_secret_names ?? [];
  const start = (e: Event) =>
    submit.run(e, async () => {
      const f = new FormData(e.currentTarget as HTMLFormElement);
      const envVars = Object.fromEntries(envNames.map((n) => [n, text(f, `env-${n}`) ?? '']));
      const secrets = Object.fromEntries(secretNames.map((n) => [n, text(f, `secret-${n}`) ?? '']));
      const run = await startRun({
        benchmark_id: benchmark.id,
        run_name: text(f, 'run_name') ?? null,
        runProfile: envNames.length || secretNames.length ? { envVars, secrets } : null,
      });
      route(`/benchmark-runs/${run.id}`);
    });
  return (
    <form onSubmit={start} aria-label="Start a run">
      <div class="grid">
        <label>
          Run name (optional)
          <input name="run_name" placeholder="my agent v1" />
        </label>
        {envNames.map((n) => (
          <label key={n}>
            Environment variable {n}
            <input name={`env-${n}`} required />
          </label>
        ))}
        {secretNames.map((n) => (
          <label key={n}>
            Your secret to use as {n}
            <input name={`secret-${n}`} required placeholder="secret name" />
          </label>
        ))}
      </div>
      <ErrorNote error={submit.error} />
      <div class="form-row">
        <button type="submit" aria-busy={submit.busy} disabled={submit.busy}>
          Start a run
        </button>
        <small>Each scenario gets a devbox of its own; your agent works in them, then each is scored.</small>
      </div>
    </form>
  );
}
