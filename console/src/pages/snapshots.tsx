// Disk snapshots: a devbox's disk kept to start new boxes from. Each row asks its status (the list view has
// none) and follows it while the snapshot is being written; take one from a running box, rename, delete.
import type { DevboxSnapshotView } from '@runloop/api-client/resources/devboxes/devboxes';
import type { DevboxSnapshotAsyncStatusView } from '@runloop/api-client/resources/devboxes/disk-snapshots';
import { useEffect, useRef, useState } from 'preact/hooks';
import { get, post } from '../api';
import { Action, bytes, Header, Status, Time } from '../ui/common';
import { type Editing, FormDialog } from '../ui/form-dialog';
import { keyValues, keyValueText, text } from '../ui/form-values';
import { PagedTable } from '../ui/paged-table';
import { useInterval, useLoad } from '../ui/use-load';

/** The snapshot's status, polled every 2 s while in progress; `settled` tells the list to reload its size. */
function SnapshotStatus({ id, settled }: { id: string; settled: () => void }) {
  const s = useLoad(() => get<DevboxSnapshotAsyncStatusView>(`/v1/devboxes/disk_snapshots/${id}/status`), [id]);
  const status = s.data?.status;
  const was = useRef(status);
  useInterval(s.reload, status === 'in_progress' ? 2000 : null);
  useEffect(() => {
    if (was.current === 'in_progress' && status && status !== 'in_progress') settled();
    was.current = status;
  }, [status]);
  if (s.error) return <span class="error">{s.error}</span>;
  if (!s.data) return <span aria-busy="true">…</span>;
  return (
    <span>
      <Status value={s.data.status} />
      {s.data.error_message && <small class="error"> {s.data.error_message}</small>}
    </span>
  );
}

function metadataText(m: Record<string, string> | null | undefined): string {
  const entries = Object.entries(m ?? {});
  return entries.length ? entries.map(([k, v]) => `${k}=${v}`).join(', ') : '—';
}

export default function Snapshots() {
  const [editing, setEditing] = useState<Editing<DevboxSnapshotView>>(null);
  const [version, setVersion] = useState(0);
  const [devbox, setDevbox] = useState('');
  const reload = () => setVersion((v) => v + 1);
  const row = editing?.mode === 'edit' ? editing.row : null;
  const take = () => setEditing({ mode: 'create' });
  return (
    <section>
      <Header title="Snapshots">
        <button type="button" onClick={take}>
          Snapshot a devbox
        </button>
      </Header>
      <form class="filters" aria-label="Filter snapshots" onSubmit={(e) => e.preventDefault()}>
        <label>
          Devbox
          <input type="search" placeholder="Devbox id" value={devbox} onChange={(e) => setDevbox(e.currentTarget.value.trim())} />
        </label>
      </form>
      <PagedTable<DevboxSnapshotView>
        label="snapshots"
        path="/v1/devboxes/disk_snapshots"
        itemsKey="snapshots"
        query={{ devbox_id: devbox || undefined }}
        version={version}
        columns={[
          {
            title: 'Snapshot',
            cell: (s) => (
              <>
                {s.name || 'unnamed'}
                <br />
                <code>{s.id}</code>
              </>
            ),
          },
          { title: 'Status', cell: (s) => <SnapshotStatus id={s.id} settled={reload} /> },
          { title: 'Size', cell: (s) => bytes(s.size_bytes) },
          {
            title: 'Source',
            cell: (s) => (
              <>
                <a href={`/devboxes/${s.source_devbox_id}`}>{s.source_devbox_id}</a>
                {s.source_blueprint_id && (
                  <>
                    <br />
                    blueprint <a href={`/blueprints/${s.source_blueprint_id}`}>{s.source_blueprint_id}</a>
                  </>
                )}
              </>
            ),
          },
          {
            title: 'Notes',
            cell: (s) => (
              <>
                {s.commit_message || '—'}
                {Object.keys(s.metadata ?? {}).length > 0 && (
                  <>
                    <br />
                    <small>{metadataText(s.metadata)}</small>
                  </>
                )}
              </>
            ),
          },
          { title: 'Created', cell: (s) => <Time ms={s.create_time_ms} /> },
          {
            title: 'Actions',
            cell: (s) => (
              <div class="row-actions">
                <a class="button" href={`/devboxes/new?snapshot_id=${s.id}`}>
                  Create devbox
                </a>
                <button type="button" class="secondary outline" onClick={() => setEditing({ mode: 'edit', row: s })}>
                  Edit
                </button>
                <Action
                  label="Delete"
                  variant="secondary"
                  confirm={`Delete snapshot ${s.name || s.id}? New devboxes can no longer start from it.`}
                  run={() => post(`/v1/devboxes/disk_snapshots/${s.id}/delete`)}
                  done={reload}
                />
              </div>
            ),
          },
        ]}
        empty={
          <p>
            A snapshot keeps a running devbox's disk so new boxes start from it.{' '}
            <button type="button" onClick={take}>
              Snapshot a devbox
            </button>
          </p>
        }
      />
      <FormDialog
        title={row ? `Edit ${row.name || row.id}` : 'Snapshot a devbox'}
        open={editing !== null}
        onClose={() => setEditing(null)}
        submitLabel={row ? 'Save' : 'Take snapshot'}
        done={reload}
        onSubmit={async (form) => {
          const body = {
            name: text(form, 'name') ?? (row ? '' : undefined),
            commit_message: text(form, 'commit_message') ?? (row ? '' : undefined),
            metadata: keyValues(text(form, 'metadata'), 'Metadata'),
          };
          if (row) return post(`/v1/devboxes/disk_snapshots/${row.id}`, body);
          const id = text(form, 'devbox_id');
          if (!id) throw new Error('Devbox id: name the running devbox to snapshot');
          return post(`/v1/devboxes/${encodeURIComponent(id)}/snapshot_disk_async`, body);
        }}
      >
        {!row && (
          <label>
            Devbox id
            <input name="devbox_id" required placeholder="dbx_…" autocomplete="off" />
            <small>The devbox must be running; it keeps running while its disk is copied.</small>
          </label>
        )}
        <label>
          Name
          <input name="name" defaultValue={row?.name ?? ''} />
        </label>
        <label>
          Commit message
          <input name="commit_message" defaultValue={row?.commit_message ?? ''} />
        </label>
        <label>
          Metadata
          <textarea name="metadata" rows={3} placeholder="team=infra" defaultValue={keyValueText(row?.metadata)} />
          <small>One KEY=value per line.</small>
        </label>
      </FormDialog>
    </section>
  );
}
