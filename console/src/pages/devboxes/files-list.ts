// A directory's entries, read by running `find` in the box through execute_sync: the API has no listing
// call. Records end in NUL and fields are tab-separated with the name last, so any name (tabs and newlines
// included) parses; the output has no newline of its own, so execute_sync's last-100-lines view holds it whole.
import { post } from '../../api';

/** Entries shown at most; a larger directory says so (its output must stay well under the view's 1 MiB). */
export const MAX_ENTRIES = 2000;

export type EntryKind = 'directory' | 'file' | 'link' | 'other';

export interface Entry {
  name: string;
  kind: EntryKind;
  /** For a symbolic link, what it points at ('directory' when it can be opened as one). */
  target: EntryKind | 'broken' | null;
  size: number;
  modifiedMs: number;
  /** `ls -l` style, e.g. drwxr-xr-x. */
  mode: string;
}

export interface Listing {
  /** The directory's absolute path, symbolic links resolved. */
  path: string;
  entries: Entry[];
  /** More entries than MAX_ENTRIES: only the first are listed. */
  truncated: boolean;
  /** What find said on stderr while listing (an unreadable directory lists nothing and says why). */
  warning: string;
}

/** A word the shell reads back as exactly `s`. */
export function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

function kindOf(c: string): EntryKind {
  return c === 'd' ? 'directory' : c === 'f' ? 'file' : c === 'l' ? 'link' : 'other';
}

/**
 * The command: change into the directory (the home directory when `path` is empty), print where that is,
 * then one record per entry. A directory that cannot be entered leaves cd's own message on stderr.
 */
function command(path: string): string {
  // A typed ~ means the home directory, as in a shell; quoted, it would not.
  const dir = path === '' || path === '~' ? '"$HOME"' : path.startsWith('~/') ? `"$HOME"/${shellQuote(path.slice(2))}` : shellQuote(path);
  return `cd -P -- ${dir} && printf '%s\\0' "$PWD" && find . -mindepth 1 -maxdepth 1 -printf '%y%Y\\t%s\\t%T@\\t%M\\t%f\\0' | head -z -n ${MAX_ENTRIES + 1}`;
}

export async function listDirectory(devboxId: string, path: string): Promise<Listing> {
  const r = await post<{ exit_status: number | null; stdout: string; stderr: string }>(`/v1/devboxes/${encodeURIComponent(devboxId)}/execute_sync`, {
    command: command(path),
  });
  if (r.exit_status !== 0) {
    const message = r.stderr.trim().replace(/^(bash: )?(line \d+: )?/, '');
    throw new Error(message || `listing ${path || 'the home directory'} failed with exit status ${r.exit_status}`);
  }
  const records = r.stdout.split('\0');
  records.pop(); // after the last NUL
  const dir = records.shift() ?? '';
  if (!dir.startsWith('/')) throw new Error('the box answered an unreadable listing');
  const entries: Entry[] = [];
  for (const rec of records.slice(0, MAX_ENTRIES)) {
    const f = rec.split('\t');
    if (f.length < 5) continue;
    const [types = '', size = '0', time = '0', mode = ''] = f;
    const kind = kindOf(types[0] ?? '');
    const target = kind !== 'link' ? null : types[1] === 'N' || types[1] === 'L' ? 'broken' : kindOf(types[1] ?? '');
    entries.push({ name: f.slice(4).join('\t'), kind, target, size: Number(size), modifiedMs: Math.round(Number(time) * 1000), mode });
  }
  const dirFirst = (e: Entry) => (e.kind === 'directory' || e.target === 'directory' ? 0 : 1);
  entries.sort((a, b) => dirFirst(a) - dirFirst(b) || a.name.localeCompare(b.name));
  return { path: dir, entries, truncated: records.length > MAX_ENTRIES, warning: r.stderr.trim() };
}

/** `child` inside `dir` ('/' joins without doubling). */
export function join(dir: string, child: string): string {
  return dir.endsWith('/') ? `${dir}${child}` : `${dir}/${child}`;
}

/** The directory above `dir`; '/' for '/'. */
export function parent(dir: string): string {
  const cut = dir.replace(/\/+$/, '').lastIndexOf('/');
  return cut <= 0 ? '/' : dir.slice(0, cut);
}
