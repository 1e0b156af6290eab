// Gateway configs: an upstream API that devboxes call through the agent gateway, which adds the credential
// (a secret named at devbox create) so the box never holds it. Header values are never returned or shown.
import type { GatewayConfigView } from '@runloop/api-client/resources/gateway-configs';
import { useState } from 'preact/hooks';
import { post } from '../api';
import { Action, Header, Time } from '../ui/common';
import { AuthFields, HeaderRows, ReplaceHeaders, readAuth, readHeaders } from '../ui/custom-headers';
import { type Editing, FormDialog } from '../ui/form-dialog';
import { checked, text } from '../ui/form-values';
import { PagedTable } from '../ui/paged-table';

function bodyOf(form: FormData, editing: boolean) {
  return {
    name: text(form, 'name'),
    endpoint: text(form, 'endpoint'),
    description: text(form, 'description') ?? '',
    auth_mechanism: readAuth(form),
    ...(!editing || checked(form, 'replace_headers') ? { custom_headers: readHeaders(form) } : {}),
  };
}

export default function GatewayConfigs() {
  const [editing, setEditing] = useState<Editing<GatewayConfigView>>(null);
  const [version, setVersion] = useState(0);
  const reload = () => setVersion((v) => v + 1);
  const create = () => setEditing({ mode: 'create' });
  const row = editing?.mode === 'edit' ? editing.row : null;
  return (
    <section>
      <Header title="Gateway configs">
        <button type="button" onClick={create}>
          Create gateway config
        </button>
      </Header>
      <p>
        A devbox created with <code>gateways: {'{ PREFIX: { gateway, secret } }'}</code> gets <code>PREFIX_URL</code> and a token in <code>PREFIX</code>; its
        requests there reach the config's endpoint with the secret applied as set below, and the box never sees the secret.
      </p>
      <PagedTable<GatewayConfigView>
        label="gateway configs"
        path="/v1/gateway-configs"
        itemsKey="gateway_configs"
        version={version}
        columns={[
          { title: 'Name', cell: (c) => c.name },
          { title: 'Endpoint', cell: (c) => <code>{c.endpoint}</code> },
          { title: 'Credential', cell: (c) => (c.auth_mechanism.type === 'header' ? `header ${c.auth_mechanism.key}` : c.auth_mechanism.type) },
          { title: 'Headers', cell: (c) => c.custom_headers?.map((h) => h.name).join(', ') || '—' },
          { title: 'Created', cell: (c) => (c.account_id ? <Time ms={c.create_time_ms} /> : '—') },
          { title: 'Id', cell: (c) => <code>{c.id}</code> },
          {
            title: 'Actions',
            // System configs (no account) are the server's own: every account may use them, none may change them.
            cell: (c) =>
              !c.account_id ? (
                'built in'
              ) : (
                <div class="row-actions">
                  <button type="button" class="secondary outline" onClick={() => setEditing({ mode: 'edit', row: c })}>
                    Edit
                  </button>
                  <Action
                    label="Delete"
                    variant="secondary"
                    confirm={`Delete gateway config ${c.name}? Devboxes using it lose access to its API.`}
                    run={() => post(`/v1/gateway-configs/${c.id}/delete`)}
                    done={reload}
                  />
                </div>
              ),
          },
        ]}
        empty={
          <p>
            Register an upstream API once (its URL and how its key is sent), then let devboxes call it with a secret they never see.{' '}
            <button type="button" onClick={create}>
              Create your first gateway config
            </button>
          </p>
        }
      />
      <FormDialog
        title={row ? `Edit ${row.name}` : 'Create gateway config'}
        open={editing !== null}
        onClose={() => setEditing(null)}
        submitLabel={row ? 'Save' : 'Create'}
        done={reload}
        onSubmit={(form) => post(row ? `/v1/gateway-configs/${row.id}` : '/v1/gateway-configs', bodyOf(form, row !== null))}
      >
        <label>
          Name
          <input name="name" required defaultValue={row?.name} />
        </label>
        <label>
          Endpoint
          <input name="endpoint" type="url" required placeholder="https://api.anthropic.com" defaultValue={row?.endpoint} />
        </label>
        <label>
          Description
          <input name="description" defaultValue={row?.description ?? ''} />
        </label>
        <AuthFields type={row?.auth_mechanism.type} headerKey={row?.auth_mechanism.key} />
        {row ? <ReplaceHeaders current={row.custom_headers ?? []} /> : <HeaderRows />}
      </FormDialog>
    </section>
  );
}
