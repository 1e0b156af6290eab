import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { BoxCgroup, type CgroupLayout } from '../../src/runtime/linux/cgroups.js';

/**
 * A box whose group does not freeze in time (a task stuck in the kernel on a loaded host) is thawed again
 * before the snapshot fails: left half-frozen, every later command and file write of the box hung (a full
 * run's fuzz test saw writes to such a box answer nothing for 45 s). The hierarchy here is a directory of
 * plain files standing for the kernel's, in cgroup v2's layout, whose state (cgroup.events) is a file apart
 * from the request (cgroup.freeze): the group never reports itself frozen.
 */
test('a freeze that does not take in time is undone, and says so', async () => {
  const mount = fs.mkdtempSync(path.join(os.tmpdir(), 'cg-'));
  const hierarchy = { mount, v2: true };
  const layout: CgroupLayout = { byController: new Map([['freezer', hierarchy]]), hierarchies: [hierarchy] };
  const group = path.join(mount, 'devboxd', 'dbx_stuck');
  fs.mkdirSync(group, { recursive: true });
  fs.writeFileSync(path.join(group, 'cgroup.events'), 'populated 1\nfrozen 0\n');
  try {
    await assert.rejects(new BoxCgroup(layout, 'dbx_stuck').freeze(150), /cgroup of dbx_stuck did not freeze within 150 ms \(thawed again\)/);
    assert.equal(fs.readFileSync(path.join(group, 'cgroup.freeze'), 'utf8'), '0', 'the group was asked to thaw');
  } finally {
    fs.rmSync(mount, { recursive: true, force: true });
  }
});
