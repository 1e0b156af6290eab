/**
 * Schema migrations, applied in order by `user_version`. Append only: a released migration never changes.
 * JSON columns hold the nested wire-level shapes (metadata, launch parameters) the domain reads whole.
 */
export const MIGRATIONS: string[] = [
  // v1: accounts, API keys (hashed), idempotency replay cache
  `CREATE TABLE accounts (
     id TEXT PRIMARY KEY,
     name TEXT NOT NULL,
     create_time_ms INTEGER NOT NULL
   );
   CREATE TABLE api_keys (
     id TEXT PRIMARY KEY,
     account_id TEXT NOT NULL REFERENCES accounts(id),
     name TEXT,
     kind TEXT NOT NULL CHECK (kind IN ('standard', 'restricted')),
     secret_hash TEXT NOT NULL UNIQUE,
     scopes TEXT NOT NULL DEFAULT '[]',
     expires_at_ms INTEGER,
     create_time_ms INTEGER NOT NULL
   );
   CREATE TABLE idempotency (
     account_id TEXT NOT NULL,
     request_id TEXT NOT NULL,
     route TEXT NOT NULL,
     status INTEGER NOT NULL,
     body TEXT NOT NULL,
     create_time_ms INTEGER NOT NULL,
     PRIMARY KEY (account_id, request_id, route)
   );`,
];
