import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { prepareRuntimeDir } from '../../src/lib/runtime-dir.js';
import { prepareSqlDir } from '../../src/resources/axons/sql-process.js';
import { prepareSqlRuntime, probeSqlRuntime } from '../../src/resources/axons/sql-runtime.js';

/**
 * A runtime directory holds exactly the files it is given, with the owner and modes its identity needs: a
 * start that finds it current writes nothing; a file changed, re-moded or replaced by a link is written again,
 * anything else is removed. The axon SQL processes' start probe names what their uid cannot use.
 */
const root = process.getuid?.() === 0;
const gid = root ? 999_900 : undefined;
const data = fs.mkdtempSync(path.join(os.tmpdir(), 'devboxd-runtime-'));
const dir = path.join(data, 'runtime', 'x');
// One file given by its bytes, one by a file to copy (as a native module of the checkout is): both compared
// in chunks, over more than one chunk here.
const source = path.join(data, 'source.node');
fs.writeFileSync(source, Buffer.alloc(300_000, 7));
const files = [
  { name: 'script.cjs', content: Buffer.alloc(100_000, 'console.log(1);\n') },
  { name: 'addon.node', content: { file: source } },
];
const bytes = (f: (typeof files)[number]) => (Buffer.isBuffer(f.content) ? f.content : fs.readFileSync(f.content.file));

after(() => fs.rmSync(data, { recursive: true, force: true }));

test('a runtime directory is written once, then only where it differs from what it must hold', () => {
  assert.deepEqual(prepareRuntimeDir(dir, files, gid), ['script.cjs', 'addon.node']);
  const mode = (p: string) => (fs.lstatSync(p).mode & 0o7777).toString(8);
  assert.equal(mode(dir), root ? '750' : '700');
  for (const f of files) {
    const p = path.join(dir, f.name);
    assert.equal(mode(p), root ? '640' : '600');
    assert.equal(fs.statSync(p).gid, gid ?? process.getgid!());
    assert.ok(fs.readFileSync(p).equals(bytes(f)));
  }
  assert.equal(mode(path.dirname(dir)), '700');

  // Warm: nothing to write.
  assert.deepEqual(prepareRuntimeDir(dir, files, gid), []);

  // The same length, one byte changed (past the first chunk), in each; a stray file; then a mode opened up.
  const addon = path.join(dir, 'addon.node');
  const script = path.join(dir, 'script.cjs');
  for (const [p, at] of [
    [addon, 150_000],
    [script, 70_000],
  ] as const) {
    const changed = fs.readFileSync(p);
    changed[at] ^= 1;
    fs.writeFileSync(p, changed);
  }
  fs.writeFileSync(path.join(dir, 'old.cjs'), 'stale');
  assert.deepEqual(prepareRuntimeDir(dir, files, gid), ['script.cjs', 'addon.node']);
  assert.ok(fs.readFileSync(addon).equals(bytes(files[1]!)));
  assert.ok(fs.readFileSync(script).equals(bytes(files[0]!)));
  assert.deepEqual(fs.readdirSync(dir).sort(), ['addon.node', 'script.cjs']);
  fs.chmodSync(script, 0o644);
  assert.deepEqual(prepareRuntimeDir(dir, files, gid), ['script.cjs']);

  fs.rmSync(addon);
  fs.symlinkSync('/etc/hostname', addon);
  assert.deepEqual(prepareRuntimeDir(dir, files, gid), ['addon.node']);
  assert.ok(fs.lstatSync(addon).isFile());

  // The source changed (a rebuilt module): copied again.
  fs.appendFileSync(source, 'x');
  assert.deepEqual(prepareRuntimeDir(dir, files, gid), ['addon.node']);
  assert.equal(fs.statSync(addon).size, 300_001);
});

test('a runtime directory that is not a directory is refused, not followed', () => {
  const link = path.join(data, 'runtime', 'link');
  fs.symlinkSync(data, link);
  assert.throws(() => prepareRuntimeDir(link, files, gid), /must be a directory/);
});

test("the SQL processes' start probe names the path their uid cannot read or write, and passes once it can", { skip: !root && 'needs root' }, async () => {
  const axons = path.join(data, 'sql', 'axons');
  const runtime = path.join(data, 'sql', 'runtime', 'axon-sql');
  prepareSqlDir(axons);
  prepareSqlRuntime(runtime);
  const probe = async () => (await probeSqlRuntime(axons, runtime).problem)?.message ?? null;
  assert.equal(await probe(), null);
  fs.chmodSync(path.join(runtime, 'better_sqlite3.node'), 0o600);
  assert.equal(await probe(), `uid 999901 (gid 999900) cannot read ${runtime}/better_sqlite3.node`);
  fs.chmodSync(axons, 0o2750);
  prepareSqlRuntime(runtime);
  assert.equal(await probe(), `uid 999901 (gid 999900) cannot write ${axons}`);
  prepareSqlDir(axons);
  assert.equal(await probe(), null);
});
