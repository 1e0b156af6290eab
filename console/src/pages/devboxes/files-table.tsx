// One directory's entries: directories (and links to them) open as links, files download or show.
import { bytes, Empty, Time } from '../../ui/common';
import { type Entry, join, type Listing, parent } from './files-list';
import { VIEW_MAX_BYTES } from './files-viewer';

function typeOf(e: Entry): string {
  if (e.kind !== 'link') return e.kind;
  return e.target === 'broken' ? 'link (broken)' : `link to ${e.target}`;
}

const opens = (e: Entry) => e.kind === 'directory' || e.target === 'directory';
const reads = (e: Entry) => e.kind === 'file' || e.target === 'file';

export function FilesTable(props: {
  listing: Listing;
  href: (dir: string) => string;
  terminalHref: string;
  busy: boolean;
  download: (e: Entry) => void;
  view: (e: Entry) => void;
}) {
  const { listing, href } = props;
  const { path, entries } = listing;
  return (
    <>
      {entries.length === 0 && !listing.warning && (
        <Empty title="This directory is empty">
          <p>
            Upload a file into it below, or make some in the <a href={props.terminalHref}>terminal</a>.
          </p>
        </Empty>
      )}
      <div class="table-wrap">
        <table class="striped files">
          <caption>
            {entries.length === 1 ? '1 entry' : `${entries.length} entries`} in <code>{path}</code>
            {listing.truncated && ` (only the first ${entries.length} are listed)`}
          </caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Type</th>
              <th scope="col">Size</th>
              <th scope="col">Modified</th>
              <th scope="col">Permissions</th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {path !== '/' && (
              <tr>
                <td>
                  <a href={href(parent(path))} aria-label="Parent directory (..)">
                    ..
                  </a>
                </td>
                <td>parent directory</td>
                <td colSpan={4} />
              </tr>
            )}
            {entries.map((e) => (
              <tr key={e.name}>
                <td class="name">{opens(e) ? <a href={href(join(path, e.name))}>{e.name}/</a> : e.name}</td>
                <td>{typeOf(e)}</td>
                <td>{e.kind === 'file' ? bytes(e.size) : '—'}</td>
                <td>
                  <Time ms={e.modifiedMs} />
                </td>
                <td>
                  <code>{e.mode}</code>
                </td>
                <td class="row-actions">
                  {reads(e) && (
                    <>
                      <button type="button" class="secondary outline" disabled={props.busy} onClick={() => props.download(e)} aria-label={`Download ${e.name}`}>
                        Download
                      </button>
                      {e.size <= VIEW_MAX_BYTES && (
                        <button type="button" class="secondary outline" onClick={() => props.view(e)} aria-label={`View ${e.name}`}>
                          View
                        </button>
                      )}
                    </>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}
