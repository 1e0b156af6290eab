// A scenario's scoring contract, readable: each function's weight, kind and what it runs.
import type { ScoringFunction } from '@runloop/api-client/resources/scenarios/scenarios';

function Code({ label, text }: { label: string; text: string | null | undefined }) {
  if (!text) return null;
  return (
    <details>
      <summary>{label}</summary>
      <pre class="payload">{text}</pre>
    </details>
  );
}

/** What a scorer does, in a line, with its scripts and files openable below it. */
function ScorerBody({ f }: { f: ScoringFunction }) {
  const s = f.scorer;
  switch (s.type) {
    case 'test_based_scorer':
      return (
        <div>
          Runs <code>{s.test_command ?? '—'}</code> after writing {s.test_files?.length ?? 0} test file{s.test_files?.length === 1 ? '' : 's'}; 1 if it passes.
          {s.test_files?.map((t) => (
            <Code key={t.file_path} label={t.file_path ?? 'file'} text={t.file_contents} />
          ))}
        </div>
      );
    case 'command_scorer':
      return (
        <div>
          Runs <code>{s.command ?? '—'}</code>; 1 on exit status 0.
        </div>
      );
    case 'bash_script_scorer':
      return (
        <div>
          A bash script that prints the score.
          <Code label="Script" text={s.bash_script} />
        </div>
      );
    case 'python_script_scorer':
      return (
        <div>
          A Python script{s.python_version_constraint ? ` (Python ${s.python_version_constraint})` : ''} that prints the score.
          <Code label="Script" text={s.python_script} />
          <Code label="Requirements" text={s.requirements_contents} />
        </div>
      );
    case 'ast_grep_scorer':
      return (
        <div>
          1 if <code>{s.pattern}</code>
          {s.lang ? ` (${s.lang})` : ''} matches under <code>{s.search_directory}</code>.
        </div>
      );
    case 'custom_scorer':
      return (
        <div>
          The custom scorer <code>{s.custom_scorer_type}</code>.
          <Code label="Parameters" text={s.scorer_params === undefined || s.scorer_params === null ? null : JSON.stringify(s.scorer_params, null, 2)} />
        </div>
      );
    default:
      return <pre class="payload">{JSON.stringify(s, null, 2)}</pre>;
  }
}

export function ScoringContract({ functions }: { functions: ScoringFunction[] }) {
  return (
    <div class="table-wrap">
      <table>
        <thead>
          <tr>
            <th scope="col">Function</th>
            <th scope="col">Weight</th>
            <th scope="col">Kind</th>
            <th scope="col">What it does</th>
          </tr>
        </thead>
        <tbody>
          {functions.map((f) => (
            <tr key={f.name}>
              <td>{f.name}</td>
              <td>{f.weight}</td>
              <td>{f.scorer.type.replace(/_/g, ' ')}</td>
              <td>
                <ScorerBody f={f} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
