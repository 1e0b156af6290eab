/**
 * Owners on restore under DEVBOXD_ROLE=all. The API server's files belong to its user (`devboxd`), whose ids
 * differ from host to host: what the backup's API user owned goes to this host's, and what others own stays
 * theirs (root, the axons' SQL group). Layers keep their owners as copied: the canonical box ids.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { ApiUser } from '../../roles/layout.js';
import { KEY_FILE, SQLITE_FILE } from './layout.js';

export function chownApi(apiDir: string, from: { uid: number; gid: number }, to: ApiUser): void {
  const dirs = [apiDir];
  while (dirs.length) {
    const dir = dirs.pop()!;
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const file = path.join(dir, e.name);
      const st = fs.lstatSync(file);
      // What the restore itself wrote there (the key file, the database's journals) is root's: the server's too.
      const ours = dir === apiDir && (e.name === KEY_FILE || e.name.startsWith(`${SQLITE_FILE}-`));
      const uid = st.uid === from.uid || ours ? to.uid : st.uid;
      const gid = st.gid === from.gid || ours ? to.gid : st.gid;
      if (uid !== st.uid || gid !== st.gid) fs.lchownSync(file, uid, gid);
      if (e.isDirectory()) dirs.push(file);
    }
  }
  fs.chownSync(apiDir, to.uid, to.gid);
  fs.chmodSync(apiDir, 0o700);
}
