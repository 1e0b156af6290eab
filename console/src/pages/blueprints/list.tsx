// Blueprints: the account's (or the public ones) a page at a time, and a build form; a new build opens its
// page, where its log follows live.
import type { BlueprintView } from '@runloop/api-client/resources/blueprints';
import { useLocation } from 'preact-iso';
import { useState } from 'preact/hooks';
import { post } from '../../api';
import { Action, Header, Status, Time } from '../../ui/common';
import { FormDialog } from '../../ui/form-dialog';
import { PagedTable } from '../../ui/paged-table';
import { BlueprintFields, blueprintBody } from './build-form';

const STATUSES = ['queued', 'provisioning', 'building', 'build_complete', 'failed'];

export default function BlueprintList() {
  const { route } = useLocation();
  const [creating, setCreating] = useState(false);
  const [publicOnes, setPublic] = useState(false);
  const [status, setStatus] = useState('');
  const [name, setName] = useState('');
  const [version, setVersion] = useState(0);
  const reload = () => setVersion((v) => v + 1);
  const create = () => setCreating(true);
  return (
    <section>
      <Header title="Blueprints">
        <button type="button" onClick={create}>
          Build blueprint
        </button>
      </Header>
      <form class="filters" aria-label="Filter blueprints" onSubmit={(e) => e.preventDefault()}>
        <label>
          Name
          <input type="search" placeholder="Blueprint name" value={name} onChange={(e) => setName(e.currentTarget.value.trim())} />
        </label>
        <label>
          Status
          <select value={status} onChange={(e) => setStatus(e.currentTarget.value)}>
            <option value="">Any status</option>
            {STATUSES.map((s) => (
              <option key={s} value={s}>
                {s.replace('_', ' ')}
              </option>
            ))}
          </select>
        </label>
        <label>
          <input type="checkbox" role="switch" aria-checked={publicOnes} checked={publicOnes} onChange={(e) => setPublic(e.currentTarget.checked)} />
          Show public blueprints instead of yours
        </label>
      </form>
      <PagedTable<BlueprintView>
        label={publicOnes ? 'public blueprints' : 'blueprints'}
        path={publicOnes ? '/v1/blueprints/list_public' : '/v1/blueprints'}
        itemsKey="blueprints"
        query={{ name: name || undefined, status: status || undefined }}
        version={version}
        columns={[
          { title: 'Name', cell: (b) => <a href={`/blueprints/${b.id}`}>{b.name}</a> },
          { title: 'Status', cell: (b) => <Status value={b.status} /> },
          { title: 'Base', cell: (b) => (b.base_blueprint_id ? <a href={`/blueprints/${b.base_blueprint_id}`}>{b.base_blueprint_id}</a> : '—') },
          { title: 'Created', cell: (b) => <Time ms={b.create_time_ms} /> },
          { title: 'Built', cell: (b) => <Time ms={b.build_finish_time_ms} /> },
          { title: 'Id', cell: (b) => <code>{b.id}</code> },
          {
            title: 'Actions',
            cell: (b) => (
              <div class="row-actions">
                {b.status === 'build_complete' && (
                  <a class="button" href={`/devboxes/new?blueprint_id=${b.id}`}>
                    Create devbox
                  </a>
                )}
                {!publicOnes && (
                  <Action
                    label="Delete"
                    variant="secondary"
                    confirm={`Delete blueprint ${b.name}? The server refuses while devboxes, snapshots or other blueprints depend on it.`}
                    run={() => post(`/v1/blueprints/${b.id}/delete`)}
                    done={reload}
                  />
                )}
              </div>
            ),
          },
        ]}
        empty={
          publicOnes ? (
            <p>No blueprint is public on this server; an operator publishes them.</p>
          ) : (
            <p>
              A blueprint is a devbox image built from a Dockerfile and setup commands; devboxes from it start ready.{' '}
              <button type="button" onClick={create}>
                Build your first blueprint
              </button>
            </p>
          )
        }
      />
      <FormDialog
        title="Build blueprint"
        open={creating}
        onClose={() => setCreating(false)}
        submitLabel="Build"
        onSubmit={(form) => post<BlueprintView>('/v1/blueprints', blueprintBody(form))}
        done={(b) => route(`/blueprints/${(b as BlueprintView).id}`)}
      >
        <BlueprintFields />
      </FormDialog>
    </section>
  );
}
