// Uploads into the directory shown: upload_file (multipart: path first, then the file, as the SDK sends
// them) by XMLHttpRequest, which reports progress. Several files go one after another.
import { useState } from 'preact/hooks';
import { upload } from '../../api';
import { ErrorNote, Progress } from '../../ui/common';
import { join } from './files-list';

export function FilesUpload({ devboxId, dir, existing, done }: { devboxId: string; dir: string; existing: Set<string>; done: () => void }) {
  const [progress, setProgress] = useState<{ name: string; sent: number; total: number } | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [sent, setSent] = useState<string[]>([]);

  const submit = async (e: Event) => {
    e.preventDefault();
    const form = e.currentTarget as HTMLFormElement;
    const files = [...((form.elements.namedItem('files') as HTMLInputElement).files ?? [])];
    if (files.length === 0) return;
    const replaced = files.filter((f) => existing.has(f.name)).map((f) => f.name);
    if (replaced.length && !window.confirm(`Replace ${replaced.join(', ')} in ${dir}?`)) return;
    setError(null);
    setSent([]);
    try {
      for (const f of files) {
        const body = new FormData();
        body.append('path', join(dir, f.name));
        body.append('file', f, f.name);
        setProgress({ name: f.name, sent: 0, total: f.size });
        await upload(`/v1/devboxes/${encodeURIComponent(devboxId)}/upload_file`, body, (n, total) => setProgress({ name: f.name, sent: n, total }));
        setSent((s) => [...s, f.name]);
      }
      form.reset();
    } catch (err) {
      setError(err instanceof Error ? err.message : String(err));
    } finally {
      setProgress(null);
      done();
    }
  };

  return (
    <form class="files-upload" onSubmit={submit} aria-label={`Upload files to ${dir}`}>
      <label>
        Files to upload into <code>{dir}</code>
        <input type="file" name="files" multiple required disabled={progress !== null} />
      </label>
      <button type="submit" aria-busy={progress !== null} disabled={progress !== null}>
        Upload
      </button>
      {progress && <Progress label={`Uploading ${progress.name}`} done={progress.sent} total={progress.total} />}
      {sent.length > 0 && !progress && <p role="status">Uploaded {sent.join(', ')}.</p>}
      <ErrorNote error={error} />
    </form>
  );
}
