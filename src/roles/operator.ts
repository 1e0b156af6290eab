/**
 * The operator's commands (`devboxd accounts …`, `secrets rotate-key`, `drain`, …) run as root with the
 * server's DEVBOXD_DATA_DIR. Under DEVBOXD_ROLE=all the API server's data is `<data>/api`, the API user's:
 * the commands act there, and whatever they made in it (a database's journal files, a rotated key) is
 * handed back to that user, so the server can still open it.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Config } from '../config.js';

export function apiSide(config: Config): Config {
  if (config.roles.role !== 'all') return config;
  const apiDir = path.join(config.dataDir, 'api');
  if (!fs.existsSync(apiDir)) return config;
  return Object.freeze({ ...config, dataDir: apiDir, shownDataDir: apiDir });
}

export function handBack(config: Config): void {
  if (config.roles.role !== 'all' || process.getuid?.() !== 0 || path.basename(config.dataDir) !== 'api') return;
  const owner = fs.statSync(config.dataDir);
  for (const name of fs.readdirSync(config.dataDir)) {
    const file = path.join(config.dataDir, name);
    const st = fs.lstatSync(file);
    if (st.uid !== owner.uid) fs.lchownSync(file, owner.uid, owner.gid);
  }
}
