// Scenarios: the account's own or the public ones a page at a time, one scenario's details with single runs,
// and the account's custom scorers.
import type { ScenarioView } from '@runloop/api-client/resources/scenarios/scenarios';
import { useLocation } from 'preact-iso';
import { useState } from 'preact/hooks';
import { Header, Status } from '../ui/common';
import { PagedTable } from '../ui/paged-table';
import { type Scope, ScopeSwitch } from '../ui/scope-switch';
import { ScenarioDetails } from './scenarios/detail';
import { Scorers } from './scenarios/scorers';

function environmentOf(s: ScenarioView): string {
  const e = s.environment;
  if (e?.blueprint_id) return `blueprint ${e.blueprint_id}`;
  if (e?.snapshot_id) return `snapshot ${e.snapshot_id}`;
  return 'default image';
}

export default function Scenarios() {
  const { query } = useLocation();
  const [scope, setScope] = useState<Scope>('own');
  const [typed, setTyped] = useState('');
  const [search, setSearch] = useState('');
  const [version, setVersion] = useState(0);
  return (
    <section>
      <Header title="Scenarios" />
      <p>A scenario is one task for an agent: a problem statement, the devbox it starts in, and the functions that score the result.</p>
      {query.id && <ScenarioDetails id={query.id} onArchived={() => setVersion((v) => v + 1)} />}
      <div class="filters">
        <ScopeSwitch label="Scenarios to show" value={scope} onChange={setScope} />
        <form
          aria-label="Search scenarios"
          onSubmit={(e) => {
            e.preventDefault();
            setSearch(typed.trim());
          }}
        >
          <label>
            Search (a name or an id)
            <input type="search" value={typed} onInput={(e) => setTyped(e.currentTarget.value)} onBlur={() => setSearch(typed.trim())} />
          </label>
        </form>
      </div>
      <h2>{scope === 'own' ? 'Your scenarios' : 'Public scenarios'}</h2>
      <PagedTable<ScenarioView>
        label={scope === 'own' ? 'scenarios' : 'public scenarios'}
        path={scope === 'own' ? '/v1/scenarios' : '/v1/scenarios/list_public'}
        itemsKey="scenarios"
        version={version}
        query={{ search: search || undefined }}
        columns={[
          { title: 'Name', cell: (s) => <a href={`/scenarios?id=${s.id}`}>{s.name}</a> },
          { title: 'Status', cell: (s) => <Status value={s.status} /> },
          { title: 'Problem statement', cell: (s) => <span class="clamp">{s.input_context.problem_statement}</span> },
          { title: 'Environment', cell: environmentOf },
          { title: 'Scored by', cell: (s) => s.scoring_contract.scoring_function_parameters.map((f) => f.name).join(', ') },
        ]}
        empty={
          scope === 'own' ? (
            <div>
              <p>
                Create them with the SDK (<code>api.scenarios.create(&#123; name, input_context, scoring_contract &#125;)</code>
                ), or start with the server's public ones:
              </p>
              <button type="button" onClick={() => setScope('public')}>
                Show the public scenarios
              </button>
            </div>
          ) : (
            <p>This server has no public scenarios.</p>
          )
        }
      />
      <Scorers />
    </section>
  );
}
