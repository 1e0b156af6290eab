// Secrets: names only (the server never returns a value). Create, set a new value, delete; a value typed
// here goes to the server and is dropped with the dialog.
import type { SecretView } from '@runloop/api-client/resources/secrets';
import { useState } from 'preact/hooks';
import { post } from '../api';
import { Action, Header, Time } from '../ui/common';
import { type Editing, FormDialog } from '../ui/form-dialog';
import { PagedTable } from '../ui/paged-table';

const enc = encodeURIComponent;

export default function Secrets() {
  const [editing, setEditing] = useState<Editing<SecretView>>(null);
  const [version, setVersion] = useState(0);
  const reload = () => setVersion((v) => v + 1);
  const create = () => setEditing({ mode: 'create' });
  return (
    <section>
      <Header title="Secrets">
        <button type="button" onClick={create}>
          Create secret
        </button>
      </Header>
      <p>
        A secret is a named value kept encrypted on the server. Devboxes receive secrets as environment variables (<code>secrets</code> at create), and MCP and
        gateway configs can name them. Values are never shown again.
      </p>
      <PagedTable<SecretView>
        label="secrets"
        path="/v1/secrets"
        itemsKey="secrets"
        version={version}
        columns={[
          { title: 'Name', cell: (s) => <code>{s.name}</code> },
          { title: 'Updated', cell: (s) => <Time ms={s.update_time_ms} /> },
          { title: 'Created', cell: (s) => <Time ms={s.create_time_ms} /> },
          {
            title: 'Actions',
            cell: (s) => (
              <div class="row-actions">
                <button type="button" class="secondary outline" onClick={() => setEditing({ mode: 'edit', row: s })}>
                  Set value
                </button>
                <Action
                  label="Delete"
                  variant="secondary"
                  confirm={`Delete secret ${s.name}? Devboxes already running keep the value they started with.`}
                  run={() => post(`/v1/secrets/${enc(s.name)}/delete`)}
                  done={reload}
                />
              </div>
            ),
          },
        ]}
        empty={
          <p>
            Store an API token or password once, then pass it to devboxes by name.{' '}
            <button type="button" onClick={create}>
              Create your first secret
            </button>
          </p>
        }
      />
      <FormDialog
        title={editing?.mode === 'edit' ? `New value for ${editing.row.name}` : 'Create secret'}
        open={editing !== null}
        onClose={() => setEditing(null)}
        submitLabel={editing?.mode === 'edit' ? 'Save value' : 'Create'}
        done={reload}
        onSubmit={(form) => {
          const value = String(form.get('value') ?? '');
          if (editing?.mode === 'edit') return post(`/v1/secrets/${enc(editing.row.name)}`, { value });
          return post('/v1/secrets', { name: String(form.get('name') ?? '').trim(), value });
        }}
      >
        {editing?.mode !== 'edit' && (
          <label>
            Name
            <input name="name" required autocomplete="off" placeholder="GITHUB_TOKEN" aria-describedby="secret-name-help" />
            <small id="secret-name-help">Letters, digits and underscores; it becomes the environment variable's name.</small>
          </label>
        )}
        <label>
          Value
          <input name="value" type="password" required autocomplete="new-password" />
        </label>
      </FormDialog>
    </section>
  );
}
