import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { lstatSync, mkdirSync, mkdtempSync, readFileSync, readlinkSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { EXIT_REFUSED, UNPACK_SCRIPT } from '../../src/resources/objects/mount-scripts.js';
import { makeTar, type TarEntry } from '../helpers/tar.js';

// The in-box unpacker of object mounts (mount-scripts.ts), run here by the host's python3 on crafted archives:
// whatever links an archive holds, nothing outside the destination is written or linked into it.
let work: string;
let outside: string;
before(() => {
  work = mkdtempSync(path.join(os.tmpdir(), 'mount-unpack-'));
  outside = path.join(work, 'outside');
  mkdirSync(outside);
  writeFileSync(path.join(outside, 'victim'), 'untouched\n');
});
after(() => rmSync(work, { recursive: true, force: true }));

function unpack(dest: string, entries: TarEntry[]) {
  const r = spawnSync('python3', ['-c', UNPACK_SCRIPT, dest, 'tar', '1000000', '100'], { input: makeTar(entries) });
  return { status: r.status, stderr: r.stderr.toString() };
}
const victimUntouched = () => {
  assert.equal(readFileSync(path.join(outside, 'victim'), 'utf8'), 'untouched\n');
  assert.equal(statSync(path.join(outside, 'victim')).nlink, 1, 'no hard link to the outside file');
};

describe('object mount unpacker: hard links and symlinks', () => {
  it('a hard link to a member that is a symlink leading out links the symlink, never what it points at', () => {
    const dest = path.join(work, 'd1');
    const r = unpack(dest, [
      { name: 'esc', type: 'symlink', linkname: path.join(outside, 'victim') },
      { name: 'hard', type: 'hardlink', linkname: 'esc' },
      { name: 'hard', data: 'overwritten\n' },
      { name: 'again', type: 'hardlink', linkname: 'esc' },
    ]);
    assert.equal(r.status, 0, r.stderr);
    victimUntouched();
    assert.ok(lstatSync(path.join(dest, 'again')).isSymbolicLink());
    assert.equal(readlinkSync(path.join(dest, 'again')), path.join(outside, 'victim'));
  });

  it('a hard link whose target path goes through a symlinked directory leading out is refused', () => {
    const dest = path.join(work, 'd2');
    const r = unpack(dest, [
      { name: 'dir', type: 'symlink', linkname: outside },
      { name: 'hard', type: 'hardlink', linkname: 'dir/victim' },
    ]);
    assert.equal(r.status, EXIT_REFUSED, r.stderr);
    assert.match(r.stderr, /leads through a link outside/);
    victimUntouched();
  });

  it('a hard link climbing out with .. or absolute is refused', () => {
    for (const linkname of ['../outside/victim', path.join(outside, 'victim')]) {
      const r = unpack(path.join(work, 'd3'), [{ name: 'hard', type: 'hardlink', linkname }]);
      assert.equal(r.status, EXIT_REFUSED, r.stderr);
      assert.match(r.stderr, /points outside/);
    }
    victimUntouched();
  });
});
