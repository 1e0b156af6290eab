// Custom scorers: a type name and the bash script that scores with it, which scenarios name in a
// custom_scorer function.
import type { ScorerListResponse } from '@runloop/api-client/resources/scenarios/scorers';
import { useState } from 'preact/hooks';
import { post } from '../../api';
import { FormDialog, type Editing } from '../../ui/form-dialog';
import { text } from '../../ui/form-values';
import { PagedTable } from '../../ui/paged-table';

const EXAMPLE = `#!/bin/bash
# $RUNLOOP_SCORER_PARAMS holds the function's scorer_params as JSON.
test -f result.txt && echo 1 || echo 0`;

export function Scorers() {
  const [editing, setEditing] = useState<Editing<ScorerListResponse>>(null);
  const [version, setVersion] = useState(0);
  const row = editing?.mode === 'edit' ? editing.row : null;
  return (
    <section aria-labelledby="scorers-heading" class="scorers">
      <header class="page-header">
        <h2 id="scorers-heading">Custom scorers</h2>
        <button type="button" class="secondary" onClick={() => setEditing({ mode: 'create' })}>
          Create scorer
        </button>
      </header>
      <FormDialog
        title={row ? `Edit scorer ${row.type}` : 'Create a custom scorer'}
        open={editing !== null}
        onClose={() => setEditing(null)}
        submitLabel={row ? 'Save' : 'Create'}
        onSubmit={(f) => post(row ? `/v1/scenarios/scorers/${row.id}` : '/v1/scenarios/scorers', { type: text(f, 'type'), bash_script: f.get('bash_script') })}
        done={() => setVersion((v) => v + 1)}
      >
        <label>
          Type (the name scenarios use in custom_scorer_type)
          <input name="type" required defaultValue={row?.type} />
        </label>
        <label>
          Bash script (prints the score, 0 to 1, as its last line)
          <textarea name="bash_script" required rows={8} class="mono" defaultValue={row?.bash_script ?? EXAMPLE} />
        </label>
      </FormDialog>
      <PagedTable<ScorerListResponse>
        label="custom scorers"
        path="/v1/scenarios/scorers"
        itemsKey="scorers"
        version={version}
        columns={[
          { title: 'Type', cell: (s) => <code>{s.type}</code> },
          { title: 'Script', cell: (s) => <span class="clamp mono">{s.bash_script.split('\n').find((l) => l.trim() && !l.startsWith('#')) ?? ''}</span> },
          { title: 'Id', cell: (s) => <code>{s.id}</code> },
          {
            title: 'Actions',
            cell: (s) => (
              <button type="button" class="secondary outline" onClick={() => setEditing({ mode: 'edit', row: s })}>
                Edit {s.type}
              </button>
            ),
          },
        ]}
        empty={<p>A custom scorer is a bash script your scenarios can score with (a scoring function of type custom_scorer).</p>}
      />
    </section>
  );
}
