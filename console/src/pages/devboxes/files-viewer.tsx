// A small file's text, read with read_file_contents (the server answers it as UTF-8 text).
import { useEffect, useRef } from 'preact/hooks';
import { request } from '../../api';
import { ErrorNote } from '../../ui/common';
import { useLoad } from '../../ui/use-load';

/** Larger files are downloaded, not shown: a page holding megabytes of text in one <pre> crawls. */
export const VIEW_MAX_BYTES = 1024 * 1024;

export function FileViewer({ devboxId, path, close }: { devboxId: string; path: string; close: () => void }) {
  const text = useLoad(
    async (signal) => (await request('POST', `/v1/devboxes/${encodeURIComponent(devboxId)}/read_file_contents`, { body: { file_path: path }, signal })).text(),
    [devboxId, path],
  );
  // The viewer opens below the listing: moving focus to it shows it and lets a keyboard close it.
  const closeButton = useRef<HTMLButtonElement>(null);
  useEffect(() => closeButton.current?.focus(), [path]);
  // Invalid UTF-8 arrives as U+FFFD, and NULs mark binary formats: either way, not something to read here.
  const binary = text.data !== undefined && /[\uFFFD\0]/.test(text.data);
  return (
    <article class="file-viewer" aria-label={`Contents of ${path}`}>
      <header class="page-header">
        <h2>{path.slice(path.lastIndexOf('/') + 1)}</h2>
        <button type="button" class="secondary outline" onClick={close} ref={closeButton} aria-label={`Close ${path}`}>
          Close
        </button>
      </header>
      <ErrorNote error={text.error} />
      {text.loading && <p aria-busy="true">Reading {path}…</p>}
      {binary && <p>This file is not UTF-8 text; download it to open it with a program that reads it.</p>}
      {text.data !== undefined && !binary && (text.data === '' ? <p>The file is empty.</p> : <pre>{text.data}</pre>)}
    </article>
  );
}
