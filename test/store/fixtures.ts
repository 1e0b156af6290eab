import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Devbox } from '../../src/resources/devboxes/types.js';
import type { Snapshot } from '../../src/resources/snapshots/types.js';
import type { Execution } from '../../src/resources/executions/types.js';
import { newId } from '../../src/lib/ids.js';
import { openStore } from '../../src/resources/core-store.js';
import { MODULE_SCHEMAS } from '../../src/resources/index.js';
import assert from 'node:assert/strict';
import { DomainError } from '../../src/platform/errors.js';
import type { ModuleSchema } from '../../src/platform/store/module-schema.js';
import type { Account, ApiKey, Store } from '../../src/platform/store/types.js';
import { startTestPostgres, type TestPostgres } from '../helpers/postgres.js';

/** One database under test, opened twice (two connections stand for two server processes sharing it). */
export interface Backend {
  name: 'sqlite' | 'postgres';
  a: Store;
  b: Store;
  /** Opens the same database once more (migrations run again, as at a server start), with these resource modules. */
  reopen(modules?: readonly ModuleSchema[]): Promise<Store>;
  /** Runs one raw statement on the database (tests of the schema guard). */
  raw(sql: string): Promise<void>;
  close(): Promise<void>;
}

export async function openSqlite(): Promise<Backend> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'devboxd-contract-'));
  const a = await openStore({ dataDir: dir, modules: MODULE_SCHEMAS });
  const b = await openStore({ dataDir: dir, modules: MODULE_SCHEMAS });
  return {
    name: 'sqlite',
    a,
    b,
    reopen: (modules = MODULE_SCHEMAS) => openStore({ dataDir: dir, modules }),
    raw: async (sql) => {
      const s = await openStore({ dataDir: dir, modules: MODULE_SCHEMAS });
      await (s as unknown as { db: { db: { exec(sql: string): void } } }).db.db.exec(sql);
      await s.close();
    },
    async close() {
      await a.close();
      await b.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

let cluster: Promise<TestPostgres> | undefined;
let holders = 0;

/** A fresh database on one throwaway cluster per test process. */
export async function openPostgres(): Promise<Backend> {
  cluster ??= startTestPostgres();
  const url = await (await cluster).database();
  const a = await openStore({ dataDir: '/nonexistent', databaseUrl: url, modules: MODULE_SCHEMAS });
  const b = await openStore({ dataDir: '/nonexistent', databaseUrl: url, modules: MODULE_SCHEMAS });
  return {
    name: 'postgres',
    a,
    b,
    reopen: (modules = MODULE_SCHEMAS) => openStore({ dataDir: '/nonexistent', databaseUrl: url, modules }),
    raw: async (sql) => {
      await (a as unknown as { db: { query(sql: string): Promise<unknown> } }).db.query(sql);
    },
    async close() {
      await a.close();
      await b.close();
    },
  };
}

/** The URL of a new empty database on the test cluster (nothing opened on it yet). */
export async function freshPostgresUrl(): Promise<string> {
  cluster ??= startTestPostgres();
  return (await cluster).database();
}

/**
 * Holds the process's test cluster for a test file: called as the file is imported (`after(holdPostgres())`),
 * it answers the release the file's `after` calls; the cluster stops with the last file's. Files run in one
 * process (scripts/test.mjs) are all imported before the first of them ends, so none stops it under another.
 */
export function holdPostgres(): () => Promise<void> {
  holders++;
  return async () => {
    if (--holders > 0 || !cluster) return;
    const c = cluster;
    cluster = undefined;
    await (await c).stop();
  };
}

export function devbox(accountId: string, over: Partial<Devbox> = {}): Devbox {
  const now = Date.now();
  return {
    id: newId('dbx'),
    accountId,
    name: null,
    status: 'running',
    createTimeMs: now,
    endTimeMs: null,
    failureReason: null,
    shutdownReason: null,
    metadata: {},
    launchParameters: {},
    environment: {},
    entrypoint: null,
    blueprintId: null,
    snapshotId: null,
    layers: [],
    sandbox: {
      limits: { cpuCores: 1, memoryBytes: 1 << 30, diskBytes: 1 << 30 },
      user: { name: 'user', uid: 1000 },
      hostname: 'box',
      launch: { launchCommands: [], keepAliveSeconds: null, afterIdle: null, suspendCommands: [], suspendDeadlineMs: 1000 },
    } as unknown as Devbox['sandbox'],
    stateTransitions: [{ status: 'provisioning', transitionTimeMs: now }],
    keepAliveAtMs: now,
    node: 'node-a',
    viewParts: [],
    ...over,
  };
}

export function snapshot(d: Devbox, over: Partial<Snapshot> = {}): Snapshot {
  const id = newId('snp');
  return {
    id,
    accountId: d.accountId,
    sourceDevboxId: d.id,
    sourceBlueprintId: null,
    name: null,
    metadata: {},
    commitMessage: null,
    status: 'in_progress',
    errorMessage: null,
    sizeBytes: null,
    layers: [id],
    createTimeMs: Date.now(),
    node: d.node,
    ...over,
  };
}

export function execution(d: Devbox, over: Partial<Execution> = {}): Execution {
  return {
    id: newId('exe'),
    accountId: d.accountId,
    devboxId: d.id,
    command: 'echo hi',
    commandId: null,
    shellName: null,
    kind: 'exec',
    status: 'queued',
    exitStatus: null,
    createTimeMs: Date.now(),
    endTimeMs: null,
    stdoutBytes: 0,
    stderrBytes: 0,
    ...over,
  };
}

export const account = async (s: Store): Promise<Account> => {
  const a = { id: newId('acc'), name: `acct-${Math.random()}`, createTimeMs: Date.now() };
  await s.accounts.createAccount(a);
  return a;
};

export const key = (accountId: string, over: Partial<ApiKey> = {}): ApiKey => ({
  id: newId('key'),
  accountId,
  name: null,
  kind: 'standard',
  secretHash: `hash-${Math.random()}`,
  scopes: [],
  expiresAtMs: null,
  createTimeMs: Date.now(),
  revokedAtMs: null,
  secretLast4: 'abcd',
  ...over,
});

export const rejectsWith = (p: Promise<unknown>, code: string, message?: RegExp) =>
  assert.rejects(p, (err: unknown) => {
    assert.ok(err instanceof DomainError, `expected a DomainError, got ${String(err)}`);
    assert.equal(err.code, code);
    if (message) assert.match(err.message, message);
    return true;
  });
