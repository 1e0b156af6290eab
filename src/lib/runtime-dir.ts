import fs from 'node:fs';
import path from 'node:path';

/**
 * A runtime directory: what a process the server runs under another identity needs to run (its bundled
 * script, the native modules it loads), copied out of the checkout into a directory of the data dir made
 * for that identity. The checkout may sit anywhere (a clone in root's 0700 home): nothing the process reads
 * depends on the directories above it, and none of them is opened up. The process reaches the directory
 * through a bind mount in its own mount namespace (the data dir itself is root's alone).
 *
 * Prepared at each start and checked by content: a file whose bytes (compared whole with what it must hold),
 * owner or mode differ is written again (to a temporary name, then renamed over), anything else in the
 * directory is removed, so a warm start reads the files and writes nothing. Files are compared and copied in
 * chunks: a start touches no memory the size of a native module (in a VM, first touches of fresh memory
 * cost more than reading the bytes: 10 ms for 2 MB here).
 */

export interface RuntimeFile {
  /** Its name in the directory (a plain name). */
  name: string;
  /** What it holds: these bytes, or those of this file (copied in the kernel). */
  content: Buffer | { file: string };
}

const CHUNK = 64 * 1024;
const chunks = [Buffer.alloc(CHUNK), Buffer.alloc(CHUNK)] as const;

/**
 * Makes `dir` hold exactly `files`. With `gid` (a server running as root for an identity of that group):
 * the directory is root's with that group, `0750`, its files `0640`; without, the server's own, `0700` and
 * `0600`. Returns the names it wrote.
 */
export function prepareRuntimeDir(dir: string, files: RuntimeFile[], gid?: number): string[] {
  const uid = process.getuid?.() ?? 0;
  const group = gid ?? process.getgid?.() ?? 0;
  fs.mkdirSync(path.dirname(dir), { recursive: true, mode: 0o700 });
  try {
    fs.mkdirSync(dir, { mode: 0o700 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    if (!fs.lstatSync(dir).isDirectory()) throw new Error(`${dir} must be a directory`);
  }
  fix(dir, uid, group, gid === undefined ? 0o700 : 0o750);
  const fileMode = gid === undefined ? 0o600 : 0o640;
  const wanted = new Set(files.map((f) => f.name));
  for (const name of fs.readdirSync(dir)) if (!wanted.has(name)) fs.rmSync(path.join(dir, name), { recursive: true, force: true });
  const written: string[] = [];
  for (const f of files) {
    const file = path.join(dir, f.name);
    if (current(file, f.content, uid, group, fileMode)) continue;
    const tmp = `${file}.${process.pid}.tmp`;
    if (Buffer.isBuffer(f.content)) fs.writeFileSync(tmp, f.content, { mode: 0o600, flag: 'wx' });
    else fs.copyFileSync(f.content.file, tmp, fs.constants.COPYFILE_EXCL);
    fix(tmp, uid, group, fileMode);
    fs.renameSync(tmp, file);
    written.push(f.name);
  }
  return written;
}

function fix(file: string, uid: number, gid: number, mode: number): void {
  const st = fs.lstatSync(file);
  if (st.uid !== uid || st.gid !== gid) fs.lchownSync(file, uid, gid);
  if ((st.mode & 0o7777) !== mode) fs.chmodSync(file, mode);
}

/** Whether `file` is a regular file of that owner, group and mode holding that content. */
function current(file: string, content: RuntimeFile['content'], uid: number, gid: number, mode: number): boolean {
  let st: fs.Stats;
  try {
    st = fs.lstatSync(file);
  } catch {
    return false;
  }
  const size = Buffer.isBuffer(content) ? content.length : fs.statSync(content.file).size;
  if (!st.isFile() || st.size !== size || st.uid !== uid || st.gid !== gid || (st.mode & 0o7777) !== mode) return false;
  const fd = fs.openSync(file, 'r');
  const other = Buffer.isBuffer(content) ? undefined : fs.openSync(content.file, 'r');
  try {
    for (let at = 0; ; at += CHUNK) {
      const n = fs.readSync(fd, chunks[0], 0, CHUNK, at);
      const want = other === undefined ? (content as Buffer).subarray(at, at + CHUNK) : chunks[1].subarray(0, fs.readSync(other, chunks[1], 0, CHUNK, at));
      if (!chunks[0].subarray(0, n).equals(want)) return false;
      if (n === 0) return true;
    }
  } finally {
    fs.closeSync(fd);
    if (other !== undefined) fs.closeSync(other);
  }
}
