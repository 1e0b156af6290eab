// Axons: the account's event streams a page at a time, found by name or id, and a form to create one.
import type { AxonView } from '@runloop/api-client/resources/axons/axons';
import { useLocation } from 'preact-iso';
import { useState } from 'preact/hooks';
import { post } from '../../api';
import { Header, Time } from '../../ui/common';
import { FormDialog } from '../../ui/form-dialog';
import { keyValues, text } from '../../ui/form-values';
import { KeyValues } from '../../ui/key-values';
import { PagedTable } from '../../ui/paged-table';

function CreateAxon({ open, onClose }: { open: boolean; onClose: () => void }) {
  const { route } = useLocation();
  return (
    <FormDialog
      title="Create an axon"
      open={open}
      onClose={onClose}
      submitLabel="Create"
      onSubmit={(f) => post<AxonView>('/v1/axons', { name: text(f, 'name') ?? null, metadata: keyValues(text(f, 'metadata'), 'Metadata') })}
      done={(axon) => route(`/axons/${(axon as AxonView).id}`)}
    >
      <label>
        Name (optional)
        <input name="name" placeholder="repo-events" />
      </label>
      <label>
        Metadata (optional, one key=value per line)
        <textarea name="metadata" rows={2} placeholder="team=infra" />
      </label>
    </FormDialog>
  );
}

export default function AxonList() {
  const [typed, setTyped] = useState('');
  const [search, setSearch] = useState('');
  const [creating, setCreating] = useState(false);
  return (
    <section>
      <Header title="Axons">
        <button type="button" onClick={() => setCreating(true)}>
          Create axon
        </button>
      </Header>
      <p>An axon is an ordered stream of events (from webhooks, agents or you) with a SQL database of its own.</p>
      <CreateAxon open={creating} onClose={() => setCreating(false)} />
      <form
        class="filters"
        aria-label="Filter axons"
        onSubmit={(e) => {
          e.preventDefault();
          setSearch(typed.trim());
        }}
      >
        <label>
          Search
          <input type="search" placeholder="Name or id" value={typed} onInput={(e) => setTyped(e.currentTarget.value)} onBlur={() => setSearch(typed.trim())} />
        </label>
      </form>
      <h2>Your axons</h2>
      <PagedTable<AxonView>
        label="axons"
        path="/v1/axons"
        itemsKey="axons"
        query={{ search: search || undefined }}
        columns={[
          { title: 'Name', cell: (a) => <a href={`/axons/${a.id}`}>{a.name || a.id}</a> },
          { title: 'Metadata', cell: (a) => <KeyValues map={a.metadata} /> },
          { title: 'Created', cell: (a) => <Time ms={a.created_at_ms} /> },
          { title: 'Id', cell: (a) => <code>{a.id}</code> },
        ]}
        empty={
          <p>
            Create your first axon with <strong>Create axon</strong> above, then publish events to it and watch them arrive live on its page. From a script:{' '}
            <code>api.axons.create(&#123; name &#125;)</code>.
          </p>
        }
      />
    </section>
  );
}
