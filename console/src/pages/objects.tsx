// Storage objects: the account's (or the public ones), uploaded the SDK's way (create → PUT the bytes to the
// presigned upload_url with progress → complete) and downloaded from a presigned URL.
import type { ObjectView } from '@runloop/api-client/resources/objects';
import { useRef, useState } from 'preact/hooks';
import { get, post } from '../api';
import { Action, bytes, ErrorNote, Header, Progress, Status, Time } from '../ui/common';
import { text } from '../ui/form-values';
import { PagedTable } from '../ui/paged-table';
import { putPresigned, saveFrom } from '../ui/presigned';

type ContentType = ObjectView['content_type'];
const TYPES: ContentType[] = ['unspecified', 'text', 'binary', 'gzip', 'tar', 'tgz'];
const DAY = 86_400_000;

/** The content type the file's name suggests (the SDK's upload helpers guess the same way). */
function guessType(name: string): ContentType {
  const n = name.toLowerCase();
  if (n.endsWith('.tar.gz') || n.endsWith('.tgz')) return 'tgz';
  if (n.endsWith('.tar')) return 'tar';
  if (n.endsWith('.gz')) return 'gzip';
  if (/\.(txt|md|json|ya?ml|csv|log|py|js|ts|sh|toml|ini|html|css|xml)$/.test(n)) return 'text';
  return 'binary';
}

function Upload({ uploaded }: { uploaded: () => void }) {
  const [file, setFile] = useState<File | null>(null);
  const [type, setType] = useState<ContentType>('binary');
  const [sent, setSent] = useState<[number, number] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [note, setNote] = useState<string | null>(null);
  const abort = useRef<AbortController | null>(null);
  const submit = async (e: Event) => {
    e.preventDefault();
    if (!file) return;
    const form = new FormData(e.currentTarget as HTMLFormElement);
    const days = Number(text(form, 'ttl_days') ?? 0);
    setError(null);
    setNote(null);
    setSent([0, file.size]);
    abort.current = new AbortController();
    let created: ObjectView | null = null;
    try {
      created = await post<ObjectView>('/v1/objects', { name: text(form, 'name') ?? file.name, content_type: type, ttl_ms: days > 0 ? days * DAY : undefined });
      if (!created.upload_url) throw new Error('the server gave no upload URL');
      await putPresigned(created.upload_url, file, (s, t) => setSent([s, t]), abort.current.signal);
      await post(`/v1/objects/${created.id}/complete`);
      setNote(`Uploaded ${created.name} (${bytes(file.size)}) as ${created.id}.`);
      (e.target as HTMLFormElement).reset();
      setFile(null);
      setType('binary');
      uploaded();
    } catch (err) {
      setError(err instanceof Error ? err.message : String(err));
      // An upload that never completes would linger as UPLOADING: remove it.
      if (created) await post(`/v1/objects/${created.id}/delete`).catch(() => undefined);
    } finally {
      setSent(null);
      abort.current = null;
    }
  };
  return (
    <article>
      <h2>Upload</h2>
      <form onSubmit={submit} class="upload-form">
        <label>
          File
          <input
            type="file"
            name="file"
            required
            onChange={(e) => {
              const f = e.currentTarget.files?.[0] ?? null;
              setFile(f);
              if (f) setType(guessType(f.name));
            }}
          />
        </label>
        <label>
          Name
          <input name="name" placeholder={file?.name ?? 'the file name'} autocomplete="off" />
        </label>
        <label>
          Content type
          <select name="content_type" value={type} onChange={(e) => setType(e.currentTarget.value as ContentType)}>
            {TYPES.map((t) => (
              <option key={t} value={t}>
                {t}
              </option>
            ))}
          </select>
        </label>
        <label>
          Delete after (days)
          <input name="ttl_days" type="number" min="0" step="1" placeholder="never" />
        </label>
        <div class="upload-actions">
          <button type="submit" disabled={!file || sent !== null} aria-busy={sent !== null}>
            Upload
          </button>
          {sent && (
            <button type="button" class="secondary" onClick={() => abort.current?.abort()}>
              Cancel upload
            </button>
          )}
        </div>
      </form>
      {sent && <Progress label="Uploading" done={sent[0]} total={sent[1]} />}
      <ErrorNote error={error} />
      {note && <p role="status">{note}</p>}
    </article>
  );
}

async function download(o: ObjectView): Promise<void> {
  const { download_url } = await get<{ download_url: string }>(`/v1/objects/${o.id}/download`);
  saveFrom(download_url, o.name);
}

export default function Objects() {
  const [version, setVersion] = useState(0);
  const [publicOnes, setPublic] = useState(false);
  const [search, setSearch] = useState('');
  const reload = () => setVersion((v) => v + 1);
  return (
    <section>
      <Header title="Objects" />
      <p>Files kept by the server: mount them into devboxes (an object mount), use them as blueprint build contexts, or download them.</p>
      <Upload uploaded={reload} />
      <h2>{publicOnes ? 'Public objects' : 'Your objects'}</h2>
      <form class="filters" aria-label="Filter objects" onSubmit={(e) => e.preventDefault()}>
        <label>
          Search
          <input type="search" placeholder="Name or id" value={search} onChange={(e) => setSearch(e.currentTarget.value.trim())} />
        </label>
        <label>
          <input type="checkbox" role="switch" aria-checked={publicOnes} checked={publicOnes} onChange={(e) => setPublic(e.currentTarget.checked)} />
          Show public objects instead of yours
        </label>
      </form>
      <PagedTable<ObjectView>
        label={publicOnes ? 'public objects' : 'objects'}
        path={publicOnes ? '/v1/objects/list_public' : '/v1/objects'}
        itemsKey="objects"
        query={{ search: search || undefined }}
        version={version}
        columns={[
          { title: 'Name', cell: (o) => o.name },
          { title: 'State', cell: (o) => <Status value={o.state.toLowerCase().replace('read_only', 'ready')} /> },
          { title: 'Size', cell: (o) => bytes(o.size_bytes) },
          { title: 'Type', cell: (o) => o.content_type },
          { title: 'Created', cell: (o) => <Time ms={o.create_time_ms} /> },
          { title: 'Expires', cell: (o) => (o.delete_after_time_ms ? <Time ms={o.delete_after_time_ms} /> : 'never') },
          { title: 'Id', cell: (o) => <code>{o.id}</code> },
          {
            title: 'Actions',
            cell: (o) => (
              <div class="row-actions">
                {o.state === 'READ_ONLY' && <Action label="Download" variant="outline" run={() => download(o)} />}
                {!publicOnes && (
                  <Action
                    label="Delete"
                    variant="secondary"
                    confirm={`Delete object ${o.name}? Devboxes cannot mount it any more.`}
                    run={() => post(`/v1/objects/${o.id}/delete`)}
                    done={reload}
                  />
                )}
              </div>
            ),
          },
        ]}
        empty={
          publicOnes ? (
            <p>No object is public on this server; an operator publishes them.</p>
          ) : (
            <p>
              Choose a file in the Upload form above to store your first object; from a script: <code>devboxd object upload FILE</code>.
            </p>
          )
        }
      />
    </section>
  );
}
