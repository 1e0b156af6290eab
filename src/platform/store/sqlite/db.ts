import Database from 'better-sqlite3';
import fs from 'node:fs';
import path from 'node:path';

export type Db = Database.Database;

/**
 * Opens the database in WAL mode with synchronous=FULL: every acknowledged state change is on disk before the
 * HTTP answer leaves, so `kill -9` loses nothing. The schema is migrated by the caller (module-schema.ts).
 */
export function openDatabase(dataDir: string): Db {
  fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const file = path.join(dataDir, 'devboxd.db');
  const db = new Database(file);
  // Tenant data: root only. SQLite creates the -wal and -shm files with the database file's mode.
  fs.chmodSync(file, 0o600);
  db.pragma('journal_mode = WAL');
  for (const f of [`${file}-wal`, `${file}-shm`]) if (fs.existsSync(f)) fs.chmodSync(f, 0o600);
  db.pragma('synchronous = FULL');
  db.pragma('foreign_keys = ON');
  db.pragma('busy_timeout = 5000');
  return db;
}
