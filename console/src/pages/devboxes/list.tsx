// Devboxes: the account's boxes a page at a time, filtered by status or found by name or id.
import type { DevboxView } from '@runloop/api-client/resources/devboxes/devboxes';
import { useState } from 'preact/hooks';
import { Header, Status, Time } from '../../ui/common';
import { PagedTable } from '../../ui/paged-table';

const STATUSES = ['provisioning', 'initializing', 'running', 'suspending', 'suspended', 'resuming', 'failure', 'shutdown'];

export default function DevboxList() {
  const [status, setStatus] = useState('');
  const [search, setSearch] = useState('');
  const [typed, setTyped] = useState('');
  return (
    <section>
      <Header title="Devboxes">
        <a href="/devboxes/new" class="button">
          Create devbox
        </a>
      </Header>
      <form
        class="filters"
        aria-label="Filter devboxes"
        onSubmit={(e) => {
          e.preventDefault();
          setSearch(typed.trim());
        }}
      >
        <label>
          Status
          <select value={status} onChange={(e) => setStatus(e.currentTarget.value)}>
            <option value="">Any status</option>
            {STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
        <label>
          Search
          <input
            type="search"
            placeholder="Name or id"
            maxLength={256}
            value={typed}
            onInput={(e) => setTyped(e.currentTarget.value)}
            onBlur={() => setSearch(typed.trim())}
          />
        </label>
      </form>
      <PagedTable<DevboxView>
        label="devboxes"
        path="/v1/devboxes"
        itemsKey="devboxes"
        query={{ status: status || undefined, search: search || undefined }}
        columns={[
          { title: 'Name', cell: (d) => <a href={`/devboxes/${d.id}`}>{d.name || d.id}</a> },
          { title: 'Status', cell: (d) => <Status value={d.status} /> },
          { title: 'Blueprint', cell: (d) => d.blueprint_id ?? '—' },
          { title: 'Created', cell: (d) => <Time ms={d.create_time_ms} /> },
          { title: 'Id', cell: (d) => <code>{d.id}</code> },
        ]}
        empty={
          <p>
            A devbox is a Linux sandbox for running code. <a href="/devboxes/new">Create your first devbox</a>, or from a script:{' '}
            <code>devboxd devbox create</code>.
          </p>
        }
      />
    </section>
  );
}
