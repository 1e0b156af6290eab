// MCP configs: an upstream MCP server and the tools devboxes may call through the MCP hub. The credential
// is a secret named at devbox create; header values are never returned, so none are shown.
import type { McpConfigView } from '@runloop/api-client/resources/mcp-configs';
import { useState } from 'preact/hooks';
import { post } from '../api';
import { Action, Header, Time } from '../ui/common';
import { AuthFields, HeaderRows, ReplaceHeaders, readAuth, readHeaders } from '../ui/custom-headers';
import { type Editing, FormDialog } from '../ui/form-dialog';
import { checked, list, text } from '../ui/form-values';
import { PagedTable } from '../ui/paged-table';

function bodyOf(form: FormData, editing: boolean) {
  return {
    name: text(form, 'name'),
    endpoint: text(form, 'endpoint'),
    description: text(form, 'description') ?? '',
    allowed_tools: list(text(form, 'allowed_tools')),
    auth_mechanism: readAuth(form),
    ...(!editing || checked(form, 'replace_headers') ? { custom_headers: readHeaders(form) } : {}),
  };
}

export default function McpConfigs() {
  const [editing, setEditing] = useState<Editing<McpConfigView>>(null);
  const [version, setVersion] = useState(0);
  const reload = () => setVersion((v) => v + 1);
  const create = () => setEditing({ mode: 'create' });
  const row = editing?.mode === 'edit' ? editing.row : null;
  return (
    <section>
      <Header title="MCP configs">
        <button type="button" onClick={create}>
          Create MCP config
        </button>
      </Header>
      <p>
        A devbox created with <code>mcp: {'{ ENV_VAR: { mcp_config, secret } }'}</code> reaches the config's server through the MCP hub, with the secret as its
        credential; the box never sees the secret.
      </p>
      <PagedTable<McpConfigView>
        label="MCP configs"
        path="/v1/mcp-configs"
        itemsKey="mcp_configs"
        version={version}
        columns={[
          { title: 'Name', cell: (c) => c.name },
          { title: 'Endpoint', cell: (c) => <code>{c.endpoint}</code> },
          { title: 'Allowed tools', cell: (c) => c.allowed_tools.join(', ') },
          { title: 'Credential', cell: (c) => (c.auth_mechanism.type === 'header' ? `header ${c.auth_mechanism.key}` : c.auth_mechanism.type) },
          { title: 'Headers', cell: (c) => c.custom_headers?.map((h) => h.name).join(', ') || '—' },
          { title: 'Created', cell: (c) => <Time ms={c.create_time_ms} /> },
          { title: 'Id', cell: (c) => <code>{c.id}</code> },
          {
            title: 'Actions',
            cell: (c) => (
              <div class="row-actions">
                <button type="button" class="secondary outline" onClick={() => setEditing({ mode: 'edit', row: c })}>
                  Edit
                </button>
                <Action
                  label="Delete"
                  variant="secondary"
                  confirm={`Delete MCP config ${c.name}? Devboxes using it lose access to its server.`}
                  run={() => post(`/v1/mcp-configs/${c.id}/delete`)}
                  done={reload}
                />
              </div>
            ),
          },
        ]}
        empty={
          <p>
            Register an MCP server once (its URL and the tools boxes may call), then attach it to devboxes with a secret.{' '}
            <button type="button" onClick={create}>
              Create your first MCP config
            </button>
          </p>
        }
      />
      <FormDialog
        title={row ? `Edit ${row.name}` : 'Create MCP config'}
        open={editing !== null}
        onClose={() => setEditing(null)}
        submitLabel={row ? 'Save' : 'Create'}
        done={reload}
        onSubmit={(form) => post(row ? `/v1/mcp-configs/${row.id}` : '/v1/mcp-configs', bodyOf(form, row !== null))}
      >
        <label>
          Name
          <input name="name" required defaultValue={row?.name} />
        </label>
        <label>
          Endpoint
          <input name="endpoint" type="url" required placeholder="https://mcp.example.com/mcp" defaultValue={row?.endpoint} />
        </label>
        <label>
          Allowed tools
          <input name="allowed_tools" required placeholder="* or search_*, get_issue" defaultValue={row?.allowed_tools.join(', ') ?? '*'} />
          <small>Comma-separated tool names or patterns; * allows every tool.</small>
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
