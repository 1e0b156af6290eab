// A box's files: browse from the box user's home directory, upload into the directory shown, download or
// read a file. The path lives in the address (?path=), so every directory is a link and Back works.
import type { DevboxView } from '@runloop/api-client/resources/devboxes/devboxes';
import { useLocation } from 'preact-iso';
import { useState } from 'preact/hooks';
import { download, get } from '../../api';
import { ErrorNote, Header, Progress, Status } from '../../ui/common';
import { useLoad } from '../../ui/use-load';
import { type Entry, join, listDirectory } from './files-list';
import { FilesTable } from './files-table';
import { FilesUpload } from './files-upload';
import { FileViewer } from './files-viewer';

/** The path's directories, each with the path that opens it: '/', '/home', '/home/user'. */
function crumbs(path: string): { name: string; path: string }[] {
  const out = [{ name: '/', path: '/' }];
  let at = '';
  for (const part of path.split('/').filter(Boolean)) {
    at += `/${part}`;
    out.push({ name: part, path: at });
  }
  return out;
}

export default function DevboxFiles({ id }: { id: string }) {
  const { query, route } = useLocation();
  const asked = query.path ?? '';
  const [version, setVersion] = useState(0);
  const box = useLoad((signal) => get<DevboxView>(`/v1/devboxes/${encodeURIComponent(id)}`, undefined, signal), [id]);
  const list = useLoad(async () => ({ asked, listing: await listDirectory(id, asked) }), [id, asked, version]);
  const [viewing, setViewing] = useState<string | null>(null);
  const [transfer, setTransfer] = useState<{ name: string; got: number; total: number } | null>(null);
  const [transferError, setTransferError] = useState<string | null>(null);
  const [typed, setTyped] = useState<string | null>(null);

  const href = (dir: string) => `/devboxes/${id}/files?path=${encodeURIComponent(dir)}`;
  // Another directory's listing stays in list.data while this one loads or fails; this one's stays shown
  // while it is read again (after an upload).
  const shown = !list.error && list.data?.asked === asked ? list.data.listing : undefined;
  const dir = shown?.path;
  const fetchFile = async (e: Entry) => {
    const path = join(dir!, e.name);
    setTransferError(null);
    setTransfer({ name: e.name, got: 0, total: e.size });
    try {
      await download(
        `/v1/devboxes/${encodeURIComponent(id)}/download_file`,
        e.name,
        (got, total) => setTransfer({ name: e.name, got, total: total || Math.max(e.size, got) }),
        undefined,
        'POST',
        { path },
      );
    } catch (err) {
      setTransferError(err instanceof Error ? err.message : String(err));
    } finally {
      setTransfer(null);
    }
  };

  const name = box.data?.name || id;
  return (
    <section>
      <Header title={`Files: ${name}`}>
        <a href={`/devboxes/${id}/terminal`} class="button secondary outline">
          Terminal
        </a>
        <a href={`/devboxes/${id}`} class="button secondary outline">
          Devbox details
        </a>
      </Header>
      {box.data && box.data.status !== 'running' && (
        <p>
          Devbox <code>{id}</code> is <Status value={box.data.status} />: its files can be read while it runs. Resume or start it from its{' '}
          <a href={`/devboxes/${id}`}>details page</a>.
        </p>
      )}
      <ErrorNote error={box.error} />
      {(dir ?? asked) !== '' && (
        <nav aria-label="Path" class="files-path">
          <ol>
            {crumbs(dir ?? asked).map((c, i, all) => (
              <li key={c.path}>{i === all.length - 1 ? <span aria-current="page">{c.name}</span> : <a href={href(c.path)}>{c.name}</a>}</li>
            ))}
          </ol>
        </nav>
      )}
      <form
        class="form-row"
        onSubmit={(e) => {
          e.preventDefault();
          if (typed?.trim()) route(href(typed.trim()));
          setTyped(null);
        }}
      >
        <label>
          Go to directory
          <input name="path" value={typed ?? dir ?? asked} onInput={(e) => setTyped(e.currentTarget.value)} placeholder="/home/user" />
        </label>
        <button type="submit" class="secondary">
          Open
        </button>
      </form>
      <h2>Directory</h2>
      <ErrorNote error={list.error} />
      {list.error && asked && (
        <p>
          <a href={href('')}>Back to the home directory</a>
        </p>
      )}
      {list.loading && !shown && <p aria-busy="true">Listing {asked || 'the home directory'}…</p>}
      {transfer && <Progress label={`Downloading ${transfer.name}`} done={transfer.got} total={transfer.total} />}
      <ErrorNote error={transferError} />
      {shown && (
        <>
          {shown.warning && <p class="error">{shown.warning}</p>}
          <FilesTable
            listing={shown}
            href={href}
            terminalHref={`/devboxes/${id}/terminal`}
            busy={transfer !== null}
            download={fetchFile}
            view={(e) => setViewing(join(shown.path, e.name))}
          />
        </>
      )}
      {viewing && <FileViewer devboxId={id} path={viewing} close={() => setViewing(null)} />}
      {shown && (
        <>
          <h2>Upload</h2>
          <FilesUpload
            key={shown.path}
            devboxId={id}
            dir={shown.path}
            existing={new Set(shown.entries.map((e) => e.name))}
            done={() => setVersion((v) => v + 1)}
          />
        </>
      )}
    </section>
  );
}
