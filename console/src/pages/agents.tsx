// Agents: the account's own or the public ones a page at a time, one agent's details, create and delete.
import type { AgentCreateParams, AgentDevboxCountsView, AgentView } from '@runloop/api-client/resources/agents';
import { useLocation } from 'preact-iso';
import { useState } from 'preact/hooks';
import { get, post } from '../api';
import { Action, ErrorNote, Fields, Header, Time } from '../ui/common';
import { FormDialog } from '../ui/form-dialog';
import { lines, text } from '../ui/form-values';
import { PagedTable } from '../ui/paged-table';
import { type Scope, ScopeSwitch } from '../ui/scope-switch';
import { useLoad } from '../ui/use-load';

type SourceType = '' | 'npm' | 'pip' | 'git' | 'object';

function sourceOf(f: FormData, type: SourceType): AgentCreateParams['source'] {
  if (!type) return null;
  const agent_setup = lines(text(f, 'agent_setup'));
  const setup = agent_setup.length ? { agent_setup } : {};
  if (type === 'npm' || type === 'pip')
    return { type, [type]: { package_name: text(f, 'package_name') ?? '', registry_url: text(f, 'registry_url') ?? null, ...setup } };
  if (type === 'git') return { type, git: { repository: text(f, 'repository') ?? '', ref: text(f, 'ref') ?? null, ...setup } };
  return { type, object: { object_id: text(f, 'object_id') ?? '', ...setup } };
}

/** What the agent is installed from, in one line. */
function sourceText(a: AgentView): string {
  const s = a.source;
  if (!s) return 'none (a command only)';
  const part = s.npm?.package_name ?? s.pip?.package_name ?? s.git?.repository ?? s.object?.object_id ?? '';
  const ref = s.git?.ref ? `@${s.git.ref}` : '';
  return `${s.type}: ${part}${ref}`;
}

function CreateAgent({ open, onClose, done }: { open: boolean; onClose: () => void; done: (a: AgentView) => void }) {
  const [type, setType] = useState<SourceType>('npm');
  return (
    <FormDialog
      title="Create an agent"
      open={open}
      onClose={onClose}
      submitLabel="Create"
      onSubmit={(f) => post<AgentView>('/v1/agents', { name: text(f, 'name'), version: text(f, 'version') ?? null, source: sourceOf(f, type) })}
      done={(a) => done(a as AgentView)}
    >
      <label>
        Name
        <input name="name" required placeholder="claude-code" />
      </label>
      <label>
        Version (optional: a semver for npm/pip, a branch or tag for git)
        <input name="version" />
      </label>
      <label>
        Installed from
        <select value={type} onChange={(e) => setType(e.currentTarget.value as SourceType)}>
          <option value="npm">an npm package</option>
          <option value="pip">a pip package</option>
          <option value="git">a git repository</option>
          <option value="object">a storage object</option>
          <option value="">nothing (a benchmark job's command only)</option>
        </select>
      </label>
      {(type === 'npm' || type === 'pip') && (
        <div class="grid">
          <label>
            Package name
            <input name="package_name" required placeholder={type === 'npm' ? '@anthropic-ai/claude-code' : 'aider-chat'} />
          </label>
          <label>
            Registry URL (optional)
            <input name="registry_url" type="url" />
          </label>
        </div>
      )}
      {type === 'git' && (
        <div class="grid">
          <label>
            Repository
            <input name="repository" required placeholder="https://github.com/owner/agent.git" />
          </label>
          <label>
            Ref (optional)
            <input name="ref" placeholder="main" />
          </label>
        </div>
      )}
      {type === 'object' && (
        <label>
          Object id
          <input name="object_id" required placeholder="obj_…" />
        </label>
      )}
      {type && (
        <label>
          Setup commands (optional, one per line, run after installing)
          <textarea name="agent_setup" rows={2} class="mono" />
        </label>
      )}
    </FormDialog>
  );
}

function AgentDetails({ id, onDeleted }: { id: string; onDeleted: () => void }) {
  const { data: agent, error } = useLoad((signal) => get<AgentView>(`/v1/agents/${id}`, undefined, signal), [id]);
  const counts = useLoad((signal) => get<AgentDevboxCountsView>('/v1/agents/devbox_counts', undefined, signal), [id]);
  if (error) return <ErrorNote error={error} />;
  if (!agent) return <p aria-busy="true">Loading the agent…</p>;
  const s = agent.source;
  const setup = s?.npm?.agent_setup ?? s?.pip?.agent_setup ?? s?.git?.agent_setup ?? s?.object?.agent_setup ?? [];
  return (
    <article aria-labelledby="agent-heading">
      <header class="page-header">
        <h2 id="agent-heading">{agent.name}</h2>
        <div class="page-actions">
          <a href="/agents" class="secondary">
            Close
          </a>
          <Action
            label="Delete"
            variant="secondary"
            confirm={`Delete the agent ${agent.name}? Boxes that mounted it keep what was installed.`}
            run={() => post(`/v1/agents/${id}/delete`)}
            done={onDeleted}
          />
        </div>
      </header>
      <Fields
        rows={[
          ['Id', <code>{agent.id}</code>],
          ['Version', agent.version || '—'],
          ['Source', sourceText(agent)],
          ['Registry', s?.npm?.registry_url ?? s?.pip?.registry_url ?? '—'],
          ['Setup commands', setup.length ? <pre class="payload">{setup.join('\n')}</pre> : '—'],
          ['Visibility', agent.is_public ? 'public: every account can mount it' : 'private to this account'],
          ['Running devboxes with it', counts.data ? String(counts.data.counts[agent.name] ?? 0) : '…'],
          ['Created', <Time ms={agent.create_time_ms} />],
        ]}
      />
      <p>
        Mount it into a devbox with <code>mounts: [&#123; type: 'agent_mount', agent_id: '{agent.id}' &#125;]</code>, or run it on a benchmark with a benchmark
        job.
      </p>
    </article>
  );
}

export default function Agents() {
  const { query, route } = useLocation();
  const [scope, setScope] = useState<Scope>('own');
  const [typed, setTyped] = useState('');
  const [search, setSearch] = useState('');
  const [creating, setCreating] = useState(false);
  const [version, setVersion] = useState(0);
  const selected = query.id;
  return (
    <section>
      <Header title="Agents">
        <button type="button" onClick={() => setCreating(true)}>
          Create agent
        </button>
      </Header>
      <CreateAgent
        open={creating}
        onClose={() => setCreating(false)}
        done={(a) => {
          setScope('own');
          setVersion((v) => v + 1);
          route(`/agents?id=${a.id}`);
        }}
      />
      {selected && (
        <AgentDetails
          id={selected}
          onDeleted={() => {
            setVersion((v) => v + 1);
            route('/agents');
          }}
        />
      )}
      <div class="filters">
        <ScopeSwitch label="Agents to show" value={scope} onChange={setScope} />
        <form
          aria-label="Search agents"
          onSubmit={(e) => {
            e.preventDefault();
            setSearch(typed.trim());
          }}
        >
          <label>
            Search
            <input
              type="search"
              placeholder="Name or id"
              value={typed}
              onInput={(e) => setTyped(e.currentTarget.value)}
              onBlur={() => setSearch(typed.trim())}
            />
          </label>
        </form>
      </div>
      <h2>{scope === 'own' ? 'Your agents' : 'Public agents'}</h2>
      <PagedTable<AgentView>
        label={scope === 'own' ? 'agents' : 'public agents'}
        path={scope === 'own' ? '/v1/agents' : '/v1/agents/list_public'}
        itemsKey="agents"
        version={version}
        query={{ search: search || undefined }}
        columns={[
          { title: 'Name', cell: (a) => <a href={`/agents?id=${a.id}`}>{a.name}</a> },
          { title: 'Version', cell: (a) => a.version || '—' },
          { title: 'Source', cell: sourceText },
          { title: 'Visibility', cell: (a) => (a.is_public ? 'public' : 'private') },
          { title: 'Created', cell: (a) => <Time ms={a.create_time_ms} /> },
        ]}
        empty={
          scope === 'own' ? (
            <p>
              An agent is a coding agent (an npm or pip package, a git repository or an object) that devboxes mount and benchmark jobs run.{' '}
              <strong>Create agent</strong> to register your first one.
            </p>
          ) : (
            <p>
              No agent is public on this server yet; the operator publishes them with <code>devboxd agents publish</code>.
            </p>
          )
        }
      />
    </section>
  );
}
