import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { test } from 'node:test';
import { createLogger } from '../../src/lib/logger.js';
import { newId } from '../../src/lib/ids.js';
import { openStore } from '../../src/resources/core-store.js';
import { AccountService } from '../../src/resources/accounts/account-service.js';
import { MODULE_SCHEMAS } from '../../src/resources/index.js';
import { ensureKeyFile, FileKeys, readKeyFile } from '../../src/platform/sealing/master-key.js';
import { Sealer } from '../../src/platform/sealing/sealer.js';
import { aadOf, SecretService } from '../../src/resources/secrets/secret-service.js';
import { SqlSecretStore } from '../../src/resources/secrets/sql-secret-store.js';
import { DEVBOXD_BIN } from '../helpers/server.js';

// SQLite has one writer: a rotation run beside a server (`devboxd secrets rotate-key`, another process)
// must not hold the write lock for long, since the server's writes wait for it on its event loop. One
// transaction for all froze the server for the whole rotation (627 ms at 20 000 secrets, 5 s and a 503 at
// 200 000). The bound is on the 99th percentile: on a shared, loaded machine a single write stalls now and
// then without any rotation (a lone 250 ms was seen at a load of 7 on 2 cores).
const N = 20_000;
const BOUND_MS = 100;

test(`a rotation of ${N} secrets beside a "server": its writes and its event loop stall ≤ ${BOUND_MS} ms (p99)`, async () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'devboxd-stall-'));
  const store = await openStore({ dataDir, modules: MODULE_SCHEMAS });
  try {
    const { account } = await new AccountService(store).createAccount('acme');
    const sealer = new Sealer(new FileKeys(ensureKeyFile(dataDir)));
    const secrets = new SecretService(store, sealer, createLogger('silent'));
    for (let i = 0; i < N; i += 1000) {
      await store.transaction(async (tx) => {
        const rows = new SqlSecretStore(tx.db);
        for (let j = i; j < i + 1000; j++) {
          const id = newId('sec');
          const sealedValue = sealer.seal('x'.repeat(200), aadOf(account.id, id));
          await rows.insert({ id, accountId: account.id, name: `S${j}`, sealedValue, keyId: Sealer.keyIdOf(sealedValue), createTimeMs: 0, updateTimeMs: 0 });
        }
      });
    }
    const before = sealer.currentKeyId();

    const loop = monitorEventLoopDelay({ resolution: 1 });
    const child = spawn(process.execPath, [DEVBOXD_BIN, 'secrets', 'rotate-key'], {
      env: { ...process.env, DEVBOXD_DATA_DIR: dataDir },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d));
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    let done = false;
    void exited.then(() => (done = true));
    // Measure only once the rotation is under way (the CLI's start-up is not the rotation).
    const keyFile = path.join(dataDir, 'secret.key');
    while (!done && readKeyFile(keyFile).length < 2) await new Promise((r) => setTimeout(r, 5));
    loop.enable();
    const took: number[] = [];
    while (!done) {
      const t = performance.now();
      await secrets.update(account.id, 'S1', `v${took.length}`);
      took.push(performance.now() - t);
      await new Promise((r) => setTimeout(r, 5));
    }
    loop.disable();
    assert.equal(await exited, 0);
    took.sort((a, b) => a - b);
    const p99 = took[Math.floor(took.length * 0.99)]!;
    const stall = loop.percentile(99) / 1e6;
    console.log(
      `rotation of ${N}: ${out.trim().split('\n')[0]}; ${took.length} server writes meanwhile: p50 ${took[took.length >> 1]!.toFixed(1)} ms, ` +
        `p99 ${p99.toFixed(1)} ms, max ${took.at(-1)!.toFixed(1)} ms; event loop delay p99 ${stall.toFixed(1)} ms, max ${(loop.max / 1e6).toFixed(1)} ms`,
    );
    // The secret the "server" keeps updating may already be sealed under the new key when the rotation
    // reaches its page (its writer re-seals after a rotation): then the rotation has one fewer to do.
    const count = Number(/re-encrypted (\d+) secrets/.exec(out)?.[1]);
    assert.ok(count === N || count === N - 1, out);
    assert.ok(p99 <= BOUND_MS, `server writes p99 ${p99.toFixed(1)} ms`);
    assert.ok(stall <= BOUND_MS, `event loop delay p99 ${stall.toFixed(1)} ms`);
    assert.ok(took.length > 100, `the server kept writing (${took.length})`);
    const ids = await new SqlSecretStore(store.db).keyIds();
    assert.deepEqual([...ids.keys()], [sealer.currentKeyId()]);
    assert.notEqual(sealer.currentKeyId(), before);
  } finally {
    await store.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
});
