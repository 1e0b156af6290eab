/**
 * The spawn path of commands (native/boxexec, the fallback when boxexecd is not running): the environment,
 * secret values among it, never shows in a host command line (/proc/PID/cmdline is readable by every host
 * user), not even while the box's forker has not answered (a frozen box, a box at pids.max); and boxexecd's
 * socket does not depend on the data dir's length.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { execdSocketDir } from '../../src/runtime/linux/execd.js';
import { execInBox } from '../../src/runtime/linux/exec.js';

function cmdlinesWith(marker: string): string[] {
  return fs.readdirSync('/proc').filter((pid) => {
    if (!/^\d+$/.test(pid)) return false;
    try {
      return fs.readFileSync(`/proc/${pid}/cmdline`, 'latin1').includes(marker);
    } catch {
      return false; // gone meanwhile
    }
  });
}

test('the environment is off every command line while the forker does not answer', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'boxexec-'));
  const forker = path.join(dir, 'forker.sock');
  // A forker that takes the request and never answers, like one in a frozen box.
  let request = Buffer.alloc(0);
  const conns: net.Socket[] = [];
  let server!: net.Server;
  const got = new Promise<void>((resolve) => {
    server = net.createServer((c) => {
      conns.push(c);
      c.on('data', (d: Buffer) => {
        request = Buffer.concat([request, d]);
        if (request.includes('--\0true')) resolve();
      });
    });
    server.listen(forker);
  });
  const marker = 'sv-envmarker-7f3a91';
  const p = execInBox({ forker, user: { name: 'user', uid: 1000, gid: 1000, home: '/home/user' } }, { argv: ['true'], env: { SECRET_TOKEN: marker } });
  p.stdout.resume();
  p.stderr.resume();
  await got;
  // The request reached the forker whole (the environment with it), and no command line holds it.
  assert.ok(request.includes(`SECRET_TOKEN=${marker}`), 'the forker did not get the environment');
  await new Promise((r) => setTimeout(r, 300));
  assert.deepEqual(cmdlinesWith(marker), [], 'a command line shows the environment');
  // The forker goes away: the command fails as one whose box stopped.
  for (const c of conns) c.destroy();
  const exit = await p.exited;
  assert.notEqual(exit.exitCode, 0);
  server.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

test("boxexecd's socket path fits a unix socket whatever the data dir's length", () => {
  const short = '/var/lib/devboxd';
  assert.equal(execdSocketDir(path.join(short, 'run'), short), path.join(short, 'run'));
  const deep = `/tmp/${'d'.repeat(120)}`;
  const dir = execdSocketDir(path.join(deep, 'run'), deep);
  assert.ok(Buffer.byteLength(path.join(dir, 'execd-4194304-123456.sock')) <= 107, dir);
  assert.notEqual(execdSocketDir(path.join(`${deep}x`, 'run'), `${deep}x`), dir, 'two data dirs share a socket directory');
});
