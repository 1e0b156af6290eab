import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { RunloopSDK } from '@runloop/api-client';

/**
 * Files (path below `dir` with `/` separators → size) under a directory, recursively; {} when it does not
 * exist. The server seals, moves and deletes files while a test lists them: a subdirectory gone under the
 * recursive readdir lists again, a file gone between readdir and stat is skipped.
 */
export function filesUnder(dir: string): Record<string, number> {
  const out: Record<string, number> = {};
  let entries: fs.Dirent[];
  for (let attempt = 0; ; attempt++) {
    try {
      entries = fs.readdirSync(dir, { recursive: true, withFileTypes: true });
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || attempt === 5) throw err;
      if (!fs.existsSync(dir)) return {};
    }
  }
  for (const e of entries) {
    if (!e.isFile()) continue;
    const st = fs.statSync(path.join(e.parentPath, e.name), { throwIfNoEntry: false });
    if (st) out[path.relative(dir, path.join(e.parentPath, e.name)).split(path.sep).join('/')] = st.size;
  }
  return out;
}

/** A build context as the SDK makes one: a directory of `files`, uploaded as a tar.gz storage object. */
export async function uploadContext(sdk: RunloopSDK, files: Record<string, string>): Promise<{ type: 'object'; object_id: string }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bp-ctx-'));
  try {
    for (const [name, text] of Object.entries(files)) {
      fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
      fs.writeFileSync(path.join(dir, name), text);
    }
    const obj = await sdk.storageObject.uploadFromDir(dir, { name: 'context.tar.gz', ttl_ms: 3_600_000 });
    return { type: 'object', object_id: obj.id };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
