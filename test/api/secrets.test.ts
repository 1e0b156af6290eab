import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import path from 'node:path';
import Database from 'better-sqlite3';
import type { Devbox } from '@runloop/api-client/sdk/devbox';
import { startTestServer, type TestServer } from '../helpers/server.js';

/**
 * Secrets through the official SDK against a real server and real boxes: the value reaches the launch
 * commands, the entrypoint, executions, named shells and a resumed box; an update reaches boxes created
 * after it; and no byte of the data dir (database, WAL, box disks, execution output) nor the server's
 * debug-level log holds a value. Commands compare hashes, so no value is ever in a command or its output.
 */
let server: TestServer;
const boxes: Devbox[] = [];
const VALUE = `sv_${randomBytes(12).toString('hex')}`;
const VALUE2 = `sv_${randomBytes(12).toString('hex')}`;
const sha = (v: string) => createHash('sha256').update(v).digest('hex');
const HASH_OF = (name: string) => `printf %s "$${name}" | sha256sum | cut -d' ' -f1`;

before(async () => {
  server = await startTestServer({ DEVBOXD_LOG_LEVEL: 'debug' });
});
after(async () => {
  for (const b of boxes) await b.shutdown().catch(() => undefined);
  await server?.stop();
});

const api = () => server.client({ maxRetries: 0 });

async function newBox(params: Parameters<ReturnType<TestServer['sdk']>['devbox']['create']>[0]): Promise<Devbox> {
  const b = await server.sdk().devbox.create({ ...params, launch_parameters: { custom_disk_size: 1, ...params?.launch_parameters } });
  boxes.push(b);
  return b;
}

async function sh(box: Devbox, command: string, shellName?: string): Promise<string> {
  const r = await api().devboxes.executeSync(box.id, { command, ...(shellName ? { shell_name: shellName } : {}) });
  assert.equal(r.exit_status, 0, `${command} failed: ${r.stderr}`);
  return r.stdout.trim();
}

async function status(p: Promise<unknown>): Promise<{ status: number; message: string }> {
  try {
    await p;
  } catch (err) {
    const e = err as { status: number; error?: { message?: string } };
    return { status: e.status, message: e.error?.message ?? '' };
  }
  assert.fail('expected an error');
}

/**
 * Files under the data dir holding `needle`: database, WAL, disk images, output. Every byte that is stored is
 * read; without `-a` grep treats a file with NULs as binary and skips its holes (SEEK_HOLE), which cannot hold
 * the needle: a box disk is a 20 GiB sparse file, and `-a` read every zero of it (tens of seconds each).
 */
function filesHolding(needle: string): string[] {
  try {
    return execFileSync('grep', ['-r', '-l', '-F', '-e', needle, server.dataDir], { maxBuffer: 1 << 24, env: { ...process.env, LC_ALL: 'C' } })
      .toString()
      .trim()
      .split('\n');
  } catch (err) {
    if ((err as { status?: number }).status === 1) return [];
    throw err;
  }
}

describe('a secret in a box', () => {
  test('reaches launch commands, the entrypoint, executions, named shells and a resumed box; never the box disk, database or logs', async () => {
    const sdk = server.sdk();
    await sdk.secret.create({ name: 'OPENAI_KEY', value: VALUE });
    assert.equal((await status(newBox({ secrets: { API_KEY: 'NOT_A_SECRET' } }))).status, 400);
    const refused = await status(api().devboxes.create({ secrets: { API_KEY: 'NOT_A_SECRET' } }));
    assert.match(refused.message, /secrets\.API_KEY: no secret named NOT_A_SECRET/);

    const box = await newBox({
      secrets: { API_KEY: 'OPENAI_KEY' },
      environment_variables: { PLAIN: 'plain' },
      launch_parameters: { launch_commands: [`${HASH_OF('API_KEY')} > ~/launch.txt`] },
      entrypoint: `${HASH_OF('API_KEY')} > ~/entrypoint.txt; exec sleep 100000`,
    });
    await api().devboxes.awaitRunning(box.id);
    assert.equal(await sh(box, 'cat ~/launch.txt'), sha(VALUE), 'launch command');
    assert.equal(await sh(box, 'cat ~/entrypoint.txt'), sha(VALUE), 'entrypoint');
    assert.equal(await sh(box, HASH_OF('API_KEY')), sha(VALUE), 'execution');
    assert.equal(await sh(box, 'echo $PLAIN'), 'plain');

    await sh(box, 'cd /tmp && export CARRIED=yes', 'work');
    assert.equal(await sh(box, `echo "$PWD $CARRIED"; ${HASH_OF('API_KEY')}`, 'work'), `/tmp yes\n${sha(VALUE)}`, 'named shell');
    // The shell's saved state (on the box's disk) carries its own variables, not the secret.
    assert.equal(await sh(box, 'grep -l CARRIED /tmp/.devboxd-shells/* | wc -l; grep -l -F -e "$API_KEY" /tmp/.devboxd-shells/* | wc -l'), '1\n0');

    await box.suspend();
    await api().devboxes.awaitSuspended(box.id);
    await box.resume();
    assert.equal(await sh(box, HASH_OF('API_KEY')), sha(VALUE), 'execution after resume');
    assert.equal(await sh(box, `echo $CARRIED; ${HASH_OF('API_KEY')}`, 'work'), `yes\n${sha(VALUE)}`, 'named shell after resume');
    assert.equal(await sh(box, 'cat ~/launch.txt'), sha(VALUE), 'launch commands after resume');

    const view = JSON.stringify(await api().devboxes.retrieve(box.id));
    assert.ok(!view.includes(VALUE), 'the devbox view');
    await sh(box, 'sync');
    assert.deepEqual(filesHolding(VALUE), [], 'no file of the data dir holds the value');
    assert.ok(!server.output().includes(VALUE), 'the debug-level log never shows it');
    // The check can fail: the box itself holds the value in its environment, and a file it writes is found.
    await sh(box, 'printf %s "$API_KEY" > ~/leak.txt && sync');
    assert.ok(filesHolding(VALUE).length > 0, 'grep finds a value written to the box disk');
    await sh(box, 'rm ~/leak.txt && sync');
  });

  test('an updated secret reaches boxes created after the update (and running boxes at their next command)', async () => {
    const sdk = server.sdk();
    const secret = await sdk.secret.create({ name: 'ROTATING', value: VALUE });
    const before = await newBox({ secrets: { TOKEN: 'ROTATING' } });
    assert.equal(await sh(before, HASH_OF('TOKEN')), sha(VALUE));
    await secret.update({ value: VALUE2 });
    const afterBox = await newBox({ secrets: { TOKEN: secret.id! } });
    assert.equal(await sh(afterBox, HASH_OF('TOKEN')), sha(VALUE2), 'a box created after the update');
    assert.equal(await sh(before, HASH_OF('TOKEN')), sha(VALUE2), "a running box's next command");
    await secret.delete();
    assert.equal(await sh(before, 'echo "${TOKEN-unset}"'), 'unset', 'a deleted secret is gone from the next command');
    assert.equal((await status(newBox({ secrets: { TOKEN: 'ROTATING' } }))).status, 400);
    await sh(afterBox, 'sync');
    assert.deepEqual(filesHolding(VALUE2), []);
    assert.ok(!server.output().includes(VALUE2));
  });

  test('a bound secret this server cannot open: the command does not start; exit 126 and stderr name the variable and the secret', async () => {
    const sdk = server.sdk();
    await sdk.secret.create({ name: 'LOST_KEY', value: VALUE });
    const box = await newBox({ secrets: { TOKEN: 'LOST_KEY' } });
    assert.equal(await sh(box, HASH_OF('TOKEN')), sha(VALUE));
    // Sealed under a key this server does not hold (a lost key file, a server on another key).
    const db = new Database(path.join(server.apiDir, 'devboxd.db'));
    db.prepare(
      "UPDATE secrets SET sealed_value = 'v1.00000000deadbeef.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', key_id = '00000000deadbeef' WHERE name = 'LOST_KEY'",
    ).run();
    db.close();
    const r = await api().devboxes.executeSync(box.id, { command: 'touch ~/ran; echo started' });
    assert.equal(r.exit_status, 126);
    assert.equal(r.stdout, '');
    assert.match(
      r.stderr,
      /^devboxd: secrets\.TOKEN: secret LOST_KEY cannot be decrypted by this server: sealed under key 00000000deadbeef.*; the command was not started\n$/,
    );
    await api().secrets.delete('LOST_KEY');
    assert.equal(await sh(box, 'test -e ~/ran && echo ran || echo not-run'), 'not-run');
  });
});

// Runloop's object-oriented secrets smoke test (api-client-ts tests/smoketests/object-oriented/secret.test.ts),
// the same calls through the same SDK.
describe('smoketest: object-oriented secrets', () => {
  const unique = (p: string) => `${p}_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`.toUpperCase();

  test('secret lifecycle', async () => {
    const sdk = server.sdk();
    const secretName = unique('SDK_TEST_SECRET');
    const createdSecret = await sdk.secret.create({ name: secretName, value: 'test-secret-value' });
    assert.equal(createdSecret.name, secretName);
    assert.match(createdSecret.id!, /^sec_/);
    const info = await createdSecret.getInfo();
    assert.match(info.id, /^sec_/);
    assert.ok(info.create_time_ms > 0);

    const updated = await sdk.secret.update(createdSecret, { value: 'updated-secret-value' });
    assert.equal(updated.name, secretName);
    assert.ok((await updated.getInfo()).update_time_ms >= info.create_time_ms);
    const again = await createdSecret.update({ value: 'updated-again-value' });
    assert.equal(again.name, secretName);

    const secrets = await sdk.secret.list();
    assert.ok(secrets.length > 0);
    assert.equal(secrets.find((s) => s.name === secretName)?.name, secretName);
    assert.ok((await sdk.secret.list({ limit: 5 })).length > 0);

    const byName = sdk.secret.fromName(secretName);
    assert.equal(byName.name, secretName);
    assert.equal(byName.id, undefined);

    const deleted = await createdSecret.delete();
    assert.equal(deleted.name, secretName);
    assert.equal(
      (await sdk.secret.list()).find((s) => s.name === secretName),
      undefined,
    );
  });

  test('devbox can access injected secret as env var', async () => {
    const sdk = server.sdk();
    const secret = await sdk.secret.create({ name: unique('SDK_DEVBOX_SECRET'), value: 'secret-for-devbox-test' });
    const devbox = await sdk.devbox.create({
      name: unique('secret-test-devbox').toLowerCase(),
      secrets: { MY_SECRET_VAR: secret },
      launch_parameters: { resource_size_request: 'X_SMALL', keep_alive_time_seconds: 60 },
    });
    boxes.push(devbox);
    const result = await devbox.cmd.exec('echo $MY_SECRET_VAR');
    assert.equal(result.exitCode, 0);
    assert.equal((await result.stdout()).trim(), 'secret-for-devbox-test');
    await devbox.shutdown();
    await secret.delete();
  });
});
