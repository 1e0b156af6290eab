import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { SQL_GID } from '../../src/resources/axons/sql-process.js';
import { DEVBOXD_BIN, ROOT, nodeScript } from '../helpers/paths.js';
import { ADMIN_KEY } from '../helpers/server.js';

/**
 * devboxd from a checkout under a directory no other user may enter, as a clone in root's 0700 home is: this
 * checkout, bind-mounted (in a mount namespace of the test's own: nothing is copied, nothing stays mounted)
 * at `repo` in a root-owned 0700 temp directory, with the data directories there too. The axon SQL suite runs
 * from it, and a server whose SQL processes cannot start says so at start, naming the path and the uid.
 */
const root = process.getuid?.() === 0;
const uid = SQL_GID + 1;
let closed: string;

/** A path of this checkout as the mounted one names it (relative, run from `<closed>/repo`); other arguments as they are. */
const inClosed = (args: string[]) => args.map((a) => (a.startsWith(`${ROOT}/`) ? path.relative(ROOT, a) : a));

/** Runs `command` from the checkout mounted at `<closed>/repo`, after `setup` (sh) there; its exit and output. */
function fromClosed(setup: string, command: string[], env: Record<string, string>, until?: RegExp): Promise<{ code: number | null; out: string }> {
  const script = `set -eu
checkout=$1; closed=$2; shift 2
mount --bind "$checkout" "$closed/repo"
# What this test is about: the SQL processes' uid cannot reach the checkout.
if setpriv --reuid=${uid} --regid=${SQL_GID} --clear-groups -- test -r "$closed/repo/package.json"; then
  echo "uid ${uid} can read the checkout: the test proves nothing" >&2; exit 99
fi
${setup}
cd "$closed/repo"
exec "$@"
`;
  // Not this runner's child: a node test file run with NODE_TEST_CONTEXT set reports in the runner's protocol.
  const { NODE_TEST_CONTEXT: _, ...own } = process.env;
  const child = spawn('unshare', ['-m', '--propagation', 'private', 'sh', '-c', script, 'sh', ROOT, closed, ...command], {
    env: { ...own, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  // A server that never says what is awaited is stopped rather than left to hold the run.
  const limit = setTimeout(() => child.kill('SIGTERM'), 120_000);
  return new Promise((resolve) => {
    const take = (b: Buffer) => {
      out += b.toString();
      if (until?.test(out)) child.kill('SIGTERM');
    };
    child.stdout.on('data', take);
    child.stderr.on('data', take);
    child.on('close', (code) => {
      clearTimeout(limit);
      resolve({ code, out });
    });
  });
}

before(() => {
  if (!root) return;
  closed = fs.mkdtempSync(path.join(os.tmpdir(), 'devboxd-closed-'));
  for (const d of ['repo', 'tmp', 'noexec']) fs.mkdirSync(path.join(closed, d));
  const st = fs.statSync(closed);
  assert.equal(st.mode & 0o777, 0o700);
  assert.equal(st.uid, 0);
});

after(() => {
  if (closed) fs.rmSync(closed, { recursive: true, force: true });
});

// Side by side: the suite waits on its SQL processes most of the time.
describe('a checkout under a closed directory', { concurrency: true }, () => {
  test('the axon SQL suite passes from a checkout under a root-owned 0700 directory', { skip: !root && 'needs root' }, async () => {
    // Its temp data directories are made under the closed directory too, as ./data is by default.
    const suite = inClosed(nodeScript(import.meta.url, '../fast/axons-sql.test.ts'));
    const r = await fromClosed('', [process.execPath, '--enable-source-maps', '--test-reporter=tap', ...suite], { TMPDIR: path.join(closed, 'tmp') });
    assert.equal(r.code, 0, r.out);
    assert.match(r.out, /# pass [1-9]/);
    assert.match(r.out, /# fail 0/);
    assert.match(r.out, /# skipped 0/);
  });

  test('a server whose SQL processes cannot load their runtime says so at start, naming the path and the uid', { skip: !root && 'needs root' }, async () => {
    // A data directory on a noexec mount: the native addon copied there cannot be mapped by any process.
    const setup = 'mount -t tmpfs -o noexec,mode=0700,size=64m tmpfs "$closed/noexec"';
    const data = path.join(closed, 'noexec/data');
    const env = {
      DEVBOXD_DATA_DIR: data,
      DEVBOXD_PORT: '0',
      DEVBOXD_ADMIN_KEY: ADMIN_KEY,
      DEVBOXD_LOG_LEVEL: 'warn',
      DEVBOXD_IMAGE_DIR: path.join(ROOT, 'data/images'),
    };
    const said = /axon SQL processes cannot start[^\n]*/;
    const r = await fromClosed(setup, [process.execPath, ...inClosed([DEVBOXD_BIN]), 'serve'], env, said);
    const line = said.exec(r.out)?.[0];
    assert.ok(line, r.out);
    // The API server runs them as its own user (no root to give them ids of their own); the path is its view
    // of `<data>/api` (README, "Roles").
    const api = execFileSync('id', ['-u', 'devboxd'], { encoding: 'utf8' }).trim();
    assert.match(line, new RegExp(`uid ${api} \\(gid \\d+\\) cannot load code from /run/devboxd/view/data/runtime/axon-sql/better_sqlite3\\.node`));
    assert.match(line, /mounted noexec/);
  });
});
