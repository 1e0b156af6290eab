// Network policies: what devboxes under a policy reach. Hostnames and CIDRs are edited as lines; a CIDR line
// may name ports ("10.0.0.0/8 443,8000-8100/tcp"). Parts of a CIDR this server never opens are shown.
import type { AllowedCidr, NetworkPolicyView, PortRule } from '@runloop/api-client/resources/network-policies';
import { useState } from 'preact/hooks';
import { post } from '../api';
import { Action, Header, Time } from '../ui/common';
import { type Editing, FormDialog } from '../ui/form-dialog';
import { checked, lines, text } from '../ui/form-values';
import { PagedTable } from '../ui/paged-table';

type Policy = NetworkPolicyView & { egress: NetworkPolicyView.Egress & { closed_cidrs?: string[] } };

const FLAGS = [
  ['allow_all', 'Allow all egress (ignores the lists below)'],
  ['allow_devbox_to_devbox', 'Allow traffic to other devboxes of the account'],
  ['allow_agent_gateway', 'Allow the agent gateway'],
  ['allow_mcp_gateway', 'Allow the MCP gateway'],
  ['allow_runloop_mirrors', 'Allow the package mirrors the operator configured'],
] as const;

function portText(p: PortRule): string {
  const range = p.end_port && p.end_port !== p.port ? `${p.port}-${p.end_port}` : String(p.port);
  return p.protocol ? `${range}/${p.protocol.toLowerCase()}` : range;
}

function cidrText(c: AllowedCidr): string {
  return c.ports?.length ? `${c.cidr} ${c.ports.map(portText).join(',')}` : c.cidr;
}

/** "10.0.0.0/8 443,8000-8100/tcp" → { cidr, ports }; errors name the line. */
function parseCidr(line: string): AllowedCidr {
  const [cidr, ports, extra] = line.split(/\s+/);
  if (extra !== undefined) throw new Error(`allowed CIDRs: "${line}" should be "CIDR [PORTS]"`);
  if (!ports) return { cidr: cidr! };
  return {
    cidr: cidr!,
    ports: ports.split(',').map((p) => {
      const m = /^(\d+)(?:-(\d+))?(?:\/(tcp|udp))?$/i.exec(p);
      if (!m) throw new Error(`allowed CIDRs: "${p}" in "${line}" is not PORT, PORT-PORT or PORT/tcp`);
      return { port: Number(m[1]), end_port: m[2] ? Number(m[2]) : null, protocol: m[3] ? (m[3].toUpperCase() as 'TCP' | 'UDP') : null };
    }),
  };
}

function bodyOf(form: FormData) {
  return {
    name: text(form, 'name'),
    description: text(form, 'description') ?? '',
    allowed_hostnames: lines(text(form, 'allowed_hostnames')),
    allowed_cidrs: lines(text(form, 'allowed_cidrs')).map(parseCidr),
    ...Object.fromEntries(FLAGS.map(([f]) => [f, checked(form, f)])),
  };
}

function summary(p: Policy): string {
  const e = p.egress;
  if (e.allow_all) return 'all egress';
  const parts = [];
  if (e.allowed_hostnames.length) parts.push(`${e.allowed_hostnames.length} host${e.allowed_hostnames.length === 1 ? '' : 's'}`);
  if (e.allowed_cidrs.length) parts.push(`${e.allowed_cidrs.length} CIDR${e.allowed_cidrs.length === 1 ? '' : 's'}`);
  for (const [f, label] of [
    ['allow_devbox_to_devbox', 'devboxes'],
    ['allow_agent_gateway', 'agent gateway'],
    ['allow_mcp_gateway', 'MCP gateway'],
    ['allow_runloop_mirrors', 'mirrors'],
  ] as const)
    if (e[f]) parts.push(label);
  return parts.length ? parts.join(', ') : 'no egress';
}

function Details({ p }: { p: Policy }) {
  const e = p.egress;
  return (
    <details>
      <summary>{summary(p)}</summary>
      <p>Hosts: {e.allowed_hostnames.length ? e.allowed_hostnames.join(', ') : 'none'}</p>
      <p>CIDRs: {e.allowed_cidrs.length ? e.allowed_cidrs.map(cidrText).join('; ') : 'none'}</p>
      {e.closed_cidrs?.length ? <p>Never reached on this server (closed by the operator): {e.closed_cidrs.join(', ')}</p> : null}
    </details>
  );
}

export default function NetworkPolicies() {
  const [editing, setEditing] = useState<Editing<Policy>>(null);
  const [version, setVersion] = useState(0);
  const reload = () => setVersion((v) => v + 1);
  const create = () => setEditing({ mode: 'create' });
  const row = editing?.mode === 'edit' ? editing.row : null;
  return (
    <section>
      <Header title="Network policies">
        <button type="button" onClick={create}>
          Create policy
        </button>
      </Header>
      <PagedTable<Policy>
        label="network policies"
        path="/v1/network-policies"
        itemsKey="network_policies"
        version={version}
        columns={[
          { title: 'Name', cell: (p) => p.name },
          { title: 'Egress', cell: (p) => <Details p={p} /> },
          { title: 'Description', cell: (p) => p.description || '—' },
          { title: 'Updated', cell: (p) => <Time ms={p.update_time_ms} /> },
          { title: 'Id', cell: (p) => <code>{p.id}</code> },
          {
            title: 'Actions',
            cell: (p) => (
              <div class="row-actions">
                <button type="button" class="secondary outline" onClick={() => setEditing({ mode: 'edit', row: p })}>
                  Edit
                </button>
                <Action
                  label="Delete"
                  variant="secondary"
                  confirm={`Delete network policy ${p.name}? The server refuses while devboxes or blueprints use it.`}
                  run={() => post(`/v1/network-policies/${p.id}/delete`)}
                  done={reload}
                />
              </div>
            ),
          },
        ]}
        empty={
          <p>
            A policy limits what a devbox reaches (hosts, CIDRs, gateways); give its id as <code>network_policy_id</code> when creating a devbox or blueprint.{' '}
            <button type="button" onClick={create}>
              Create your first policy
            </button>
          </p>
        }
      />
      <FormDialog
        title={row ? `Edit ${row.name}` : 'Create network policy'}
        open={editing !== null}
        onClose={() => setEditing(null)}
        submitLabel={row ? 'Save' : 'Create'}
        done={reload}
        onSubmit={(form) => (row ? post(`/v1/network-policies/${row.id}`, bodyOf(form)) : post('/v1/network-policies', bodyOf(form)))}
      >
        <label>
          Name
          <input name="name" required defaultValue={row?.name} />
        </label>
        <label>
          Description
          <input name="description" defaultValue={row?.description ?? ''} />
        </label>
        <fieldset>
          <legend>Egress</legend>
          {FLAGS.map(([f, label]) => (
            <label key={f}>
              <input type="checkbox" name={f} defaultChecked={row ? row.egress[f] : false} />
              {label}
            </label>
          ))}
        </fieldset>
        <label>
          Allowed hostnames
          <textarea name="allowed_hostnames" rows={3} placeholder={'github.com\n*.pypi.org'} defaultValue={row?.egress.allowed_hostnames.join('\n')} />
          <small>
            One per line; <code>*.</code> matches subdomains.
          </small>
        </label>
        <label>
          Allowed CIDRs
          <textarea
            name="allowed_cidrs"
            rows={3}
            placeholder={'203.0.113.0/24\n198.51.100.7/32 443,8000-8100/tcp'}
            defaultValue={row?.egress.allowed_cidrs.map(cidrText).join('\n')}
          />
          <small>One per line: an IPv4 CIDR, then optionally ports (every port when none).</small>
        </label>
      </FormDialog>
    </section>
  );
}
