import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { runCli } from '../../src/cli/index.js';

/**
 * The operator CLI: `--help` for the whole and for every command exits 0; a command line that fits no command
 * exits 2 with a usage line; commands that run do their work on the database of a data dir of their own. All
 * in this process (a process per command cost seconds of the fast tier); the API tier runs the CLI as
 * operators do (keys, drain, publish).
 */
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'devboxd-cli-'));
after(() => fs.rmSync(dataDir, { recursive: true, force: true }));

/** The CLI in this process: its exit code and what it wrote. */
async function parsed(...args: string[]) {
  let out = '';
  let err = '';
  const code = await runCli(args, { out: (s) => (out += s), err: (s) => (err += s) });
  return { code, out, err };
}

/** The CLI in this process on this file's data dir (commands read DEVBOXD_DATA_DIR as they start). */
async function onDataDir(...args: string[]) {
  const was = process.env.DEVBOXD_DATA_DIR;
  process.env.DEVBOXD_DATA_DIR = dataDir;
  try {
    return await parsed(...args);
  } finally {
    if (was === undefined) delete process.env.DEVBOXD_DATA_DIR;
    else process.env.DEVBOXD_DATA_DIR = was;
  }
}

test('--help lists every command, and each command has a --help of its own (exit 0)', async () => {
  const all = await parsed('--help');
  assert.equal(all.code, 0, all.err);
  const commands = all.out
    .split('\n')
    .filter((l) => l.startsWith('  devboxd '))
    .map((l) =>
      l
        .trim()
        .split(' ')
        .slice(1)
        .filter((w) => /^[a-z-]+$/.test(w)),
    );
  for (const words of [['serve'], ['keys', 'create'], ['secrets', 'rotate-key'], ['drain'], ['agents', 'unpublish']]) {
    assert.ok(
      commands.some((c) => c.join(' ') === words.join(' ')),
      `${words.join(' ')} is listed`,
    );
  }
  for (const words of commands) {
    const one = await parsed(...words, '--help');
    assert.equal(one.code, 0, `${words.join(' ')} --help: ${one.err}`);
    assert.ok(one.out.startsWith(`usage: devboxd ${words.join(' ')}`), one.out);
  }
  assert.equal((await parsed('help')).out, all.out);
});

test('what fits no command exits 2 with a usage line on stderr and nothing on stdout', async () => {
  for (const [args, message, usage] of [
    [['nope'], /no command "nope"/, /usage: devboxd COMMAND/],
    [['keys', 'create'], /keys create: takes ACCOUNT_NAME/, /usage: devboxd keys create ACCOUNT_NAME/],
    [['keys', 'list', 'a', 'b'], /takes ACCOUNT_NAME/, /usage: devboxd keys list ACCOUNT_NAME/],
    [['secrets', 'rotate-key', '--bogus'], /Unknown option '--bogus'/, /usage: devboxd secrets rotate-key \[--new-key-file FILE\] \[--prune\]/],
    [['drain', '--grace-seconds', 'soon'], /--grace-seconds must be an integer/, /usage: devboxd drain \[NODE\] \[--grace-seconds N\]/],
    [['drain', 'n1', 'n2'], /drain: takes \[NODE\]/, /usage: devboxd drain \[NODE\]/],
    [['drain', '--wait-seconds', '5'], /--wait-seconds goes with NODE/, /usage: devboxd drain \[NODE\]/],
    [['drain', 'n1', '--grace-seconds', '5'], /--grace-seconds is the node's DEVBOXD_EVICT_GRACE_SECONDS/, /usage: devboxd drain \[NODE\]/],
    [['undrain'], /undrain: takes NODE/, /usage: devboxd undrain NODE/],
  ] as const) {
    const r = await parsed(...args);
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.out}${r.err}`);
    assert.match(r.err, message);
    assert.match(r.err, usage);
    assert.equal(r.out, '');
  }
});

test('accounts create, keys create and keys list work on the data dir; an unknown account exits 1', async () => {
  const made = await onDataDir('accounts', 'create', 'cli-team');
  assert.equal(made.code, 0, made.err);
  const first = made.out.trim().split('\n').at(-1)!;
  assert.match(first, /^ak_/);
  const more = await onDataDir('keys', 'create', 'cli-team');
  assert.equal(more.code, 0, more.err);
  const listed = await onDataDir('keys', 'list', 'cli-team');
  assert.equal(listed.code, 0, listed.err);
  assert.equal(listed.out.trim().split('\n').length, 3, listed.out);
  assert.ok(listed.out.includes(`\t${first.slice(-4)}\t`));
  const none = await onDataDir('keys', 'create', 'no-such-team');
  assert.equal(none.code, 1);
  assert.match(none.err, /no account named no-such-team/);
});

test("pools set, list and clear work on the data dir; a bad size or count exits 2; the pools' account takes no key", async () => {
  const bad = await onDataDir('pools', 'set', 'HUGE', '2');
  assert.equal(bad.code, 2);
  assert.match(bad.err, /SIZE must be one of X_SMALL, SMALL/);
  assert.equal((await onDataDir('pools', 'set', 'SMALL', '-1')).code, 2);
  assert.equal((await onDataDir('pools', 'set', 'SMALL', '1001')).code, 2);
  assert.equal((await onDataDir('pools', 'set', 'LARGE', '3')).code, 0);
  const listed = await onDataDir('pools', 'list', '--json');
  assert.equal(listed.code, 0, listed.err);
  assert.deepEqual(
    JSON.parse(listed.out).settings.map((s: { size: string; count: number }) => [s.size, s.count]),
    [['LARGE', 3]],
  );
  assert.match((await onDataDir('pools', 'list')).out, /SMALL\t\(DEVBOXD_WARM_POOL of each server\)/);
  assert.match((await onDataDir('pools', 'clear')).out, /cleared 1 warm pool setting\n/);
  assert.deepEqual(JSON.parse((await onDataDir('pools', 'list', '--json')).out).settings, []);
  // The account pooled boxes belong to until a create takes one exists (every box has an account), by a
  // name no operator types by chance; a key for it would reach every pooled box.
  // (bin.ts prints a command's error and exits 1.)
  await assert.rejects(onDataDir('keys', 'create', '(warm pools)'), /the warm pools account takes no keys/);
});

test('completion bash: a script bash sources, completing commands, their second words and their options', async () => {
  const script = await parsed('completion', 'bash');
  assert.equal(script.code, 0, script.err);
  const complete = (...words: string[]) =>
    spawnSync('bash', [
      '-c',
      `${script.out}\nCOMP_WORDS=(devboxd ${words.map((w) => `"${w}"`).join(' ')}); COMP_CWORD=${words.length}; _devboxd; echo "\${COMPREPLY[*]}"`,
    ])
      .stdout.toString()
      .trim();
  assert.equal(complete('dev'), 'devbox');
  assert.equal(complete('devbox', 'ex'), 'exec');
  assert.equal(complete('pools', 's'), 'set');
  assert.equal(complete('pools', 'set', '--b'), '--blueprint');
  assert.equal(complete('comp'), 'completion');
  assert.equal((await parsed('completion', 'fish')).code, 2);
});
