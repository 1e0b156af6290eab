/**
 * SSH into boxes (issue 13, item 4), with the stock OpenSSH client: `create_ssh_key` through the official SDK,
 * then `ssh` with the SDK's ProxyCommand (`openssl s_client -servername %h`) to the API port of a server started
 * with no SSH setting (TLS connections there are SSH: issue 24, item 6) runs
 * commands and an interactive shell in the box as its user; a wrong key, a key of another box (of the same
 * account or another) and a key the box's own `authorized_keys` names (written by a command in the box, or
 * baked into the snapshot a box starts from) are refused (issue 23, item 2); an unknown and a suspended box
 * get the same message before a login; the key still works after a server restart; the plain port takes the devbox id as user name; sftp and scp work with the box's own sftp-server.
 * Traffic goes only to 127.0.0.1.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { after, before, describe, test } from 'node:test';
import type Runloop from '@runloop/api-client';
import ssh2 from 'ssh2';
import { newKeyPair } from '../../src/resources/ssh/key-pair.js';
import { DEVBOXD_BIN, ROOT, sharedTestDatabase, startTestServer, type TestServer } from '../helpers/server.js';
import { freePort, ssh as run, sshTool, writeKey } from '../helpers/ssh-client.js';

let server: TestServer;
let api: Runloop;
let tlsPort: number;
let plainPort: number;
// On PostgreSQL (DEVBOXD_TEST_DATABASE) the operator CLI that makes a second account needs the server's database.
let db: { url: string; release(): Promise<void> } | undefined;
const keyDir = fs.mkdtempSync(path.join(os.tmpdir(), 'devboxd-ssh-keys-'));

/** The stock client against this file's server. */
const ssh = (key: string, target: string, args: string[], opts: { input?: string; plain?: boolean; extra?: string[] } = {}) =>
  run({ key, target, args, port: opts.plain ? plainPort : tlsPort, ...opts });
const keyFile = (name: string, privateKey: string) => writeKey(keyDir, name, privateKey);

before(async () => {
  plainPort = await freePort();
  if (process.env.DEVBOXD_TEST_DATABASE === 'postgres') db = await sharedTestDatabase();
  // No DEVBOXD_SSH_PORT: SSH over TLS shares the API port, as after `npm start`.
  server = await startTestServer({ DEVBOXD_SSH_PLAIN_PORT: String(plainPort), ...(db ? { DEVBOXD_DATABASE_URL: db.url } : {}) });
  tlsPort = Number(new URL(server.url).port);
  api = server.client();
});

after(async () => {
  await server?.stop();
  await db?.release();
  fs.rmSync(keyDir, { recursive: true, force: true });
});

describe('ssh into a box', () => {
  let boxA: string;
  let boxB: string;
  let keyA: string;
  let target: string;

  before(async () => {
    const [a, b] = await Promise.all([
      api.devboxes.createAndAwaitRunning({ name: 'ssh-a', environment_variables: { GREETING: 'hello from a' } }),
      api.devboxes.createAndAwaitRunning({ name: 'ssh-b' }),
    ]);
    boxA = a.id;
    boxB = b.id;
  });

  test('create_ssh_key returns a private key, the box user and a host name for the box', async () => {
    const k = await api.devboxes.createSSHKey(boxA);
    assert.equal(k.id, boxA);
    assert.equal(k.ssh_user, 'user');
    assert.match(k.ssh_private_key, /^-----BEGIN OPENSSH PRIVATE KEY-----\n/);
    assert.equal(k.url, `${boxA.replace('_', '-')}.ssh.127.0.0.1`);
    keyA = keyFile('a', k.ssh_private_key);
    // A retry with the same x-request-id answers the same pair, kept sealed meanwhile; a new call, a new pair.
    const again = await api.devboxes.createSSHKey(boxA, { idempotencyKey: 'ssh-key-once' });
    const third = await api.devboxes.createSSHKey(boxA, { idempotencyKey: 'ssh-key-once' });
    assert.equal(again.ssh_private_key, third.ssh_private_key);
    assert.notEqual(again.ssh_private_key, k.ssh_private_key);
    for (const f of fs.readdirSync(server.apiDir).filter((n) => n.startsWith('devboxd.db'))) {
      assert.equal(fs.readFileSync(path.join(server.apiDir, f)).includes('OPENSSH PRIVATE KEY'), false, `${f} holds a private key`);
    }
    target = `${k.ssh_user}@${k.url}`;
    // The public half is kept by the server: nothing is written into the box.
    const r = await api.devboxes.executeAndAwaitCompletion(boxA, { command: 'ls -A ~/.ssh 2>&1 || true' });
    assert.match(r.stdout ?? '', /No such file or directory/);
  });

  test('ssh runs a command in the box as its user, with its environment, stdin and exit status', async () => {
    const r = await ssh(keyA, target, ['id -un; hostname; echo "$GREETING"; pwd']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'user\nssh-a\nhello from a\n/home/user\n');
    const counted = await ssh(keyA, target, ['wc -c; echo oops >&2; exit 7'], { input: 'x'.repeat(100_000) });
    assert.equal(counted.code, 7);
    assert.equal(counted.stdout.trim(), '100000');
    assert.match(counted.stderr, /oops/);
  });

  test('an interactive shell with -tt runs what the here-doc types, on a terminal of the box', async () => {
    const r = await ssh(keyA, target, [], { extra: ['-tt'], input: 'echo "sum=$((6*7))"\necho "user=$(id -un) term=$TERM"\ntty; stty size\nexit 3\n' });
    assert.equal(r.code, 3, r.stderr);
    assert.match(r.stdout, /sum=42/);
    assert.match(r.stdout, /user=user term=\S+/);
    assert.match(r.stdout, /\/dev\/pts\/\d+\r\n/);
    // ssh's own stdin is no terminal here, so it asks for no size: the box's terminal is 80x24.
    assert.match(r.stdout, /\r\n24 80\r\n/);
  });

  test('a terminal session takes its size, resizes, and ^C reaches the foreground command (ssh2 client)', async () => {
    const k = await api.devboxes.createSSHKey(boxA);
    const url = k.url;
    const client = new ssh2.Client();
    const sock = tls.connect({ host: '127.0.0.1', port: tlsPort, servername: url, rejectUnauthorized: false });
    await new Promise<void>((resolve, reject) => {
      client.once('ready', () => resolve()).once('error', reject);
      client.connect({ sock, username: k.ssh_user, privateKey: k.ssh_private_key });
    });
    try {
      const stream = await new Promise<ssh2.ClientChannel>((resolve, reject) =>
        client.shell({ term: 'xterm-256color', cols: 100, rows: 30 }, (err, ch) => (err ? reject(err) : resolve(ch))),
      );
      let screen = '';
      stream.on('data', (d: Buffer) => (screen += d.toString()));
      const waitFor = async (re: RegExp, from: number) => {
        const deadline = Date.now() + 15_000;
        while (!re.test(screen.slice(from))) {
          if (Date.now() > deadline) assert.fail(`no ${re} on the terminal; it shows:\n${screen.slice(from)}`);
          await new Promise((r) => setTimeout(r, 50));
        }
      };
      const type = async (line: string, re: RegExp) => {
        const from = screen.length;
        stream.write(line);
        await waitFor(re, from);
      };
      await type('echo "size=$(stty size) term=$TERM"\n', /size=30 100 term=xterm-256color/);
      stream.setWindow(40, 120, 0, 0);
      await new Promise((r) => setTimeout(r, 300));
      await type('echo "size=$(stty size)"\n', /size=40 120/);
      await type('sleep 300\n', /sleep 300/);
      await new Promise((r) => setTimeout(r, 500));
      stream.write('\x03');
      await type('echo "after=$?"\n', /after=130/);
      const exit = new Promise<number>((resolve) => stream.once('exit', (code: number) => resolve(code)));
      stream.write('exit 5\n');
      assert.equal(await exit, 5);
    } finally {
      client.end();
    }
  });

  test('a wrong key is refused', async () => {
    const stranger = keyFile('stranger', newKeyPair('stranger').private);
    const r = await ssh(stranger, target, ['echo in']);
    assert.equal(r.code, 255);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, /Permission denied \(publickey\)/);
    // Passwords (and every other method) are refused without a look.
    const client = new ssh2.Client();
    const sock = tls.connect({ host: '127.0.0.1', port: tlsPort, servername: target.split('@')[1], rejectUnauthorized: false });
    const err = await new Promise<Error>((resolve) => {
      client.once('ready', () => resolve(new Error('logged in'))).once('error', resolve);
      client.connect({ sock, username: 'user', password: 'user', tryKeyboard: true });
    });
    client.end();
    assert.match(err.message, /All configured authentication methods failed/);
  });

  test('a key a command in the box appends to its authorized_keys is refused; the issued key still logs in', async () => {
    const author = newKeyPair('author');
    const line = author.public.replace(/'/g, '');
    await api.devboxes.executeAndAwaitCompletion(boxA, {
      command: `mkdir -p -m 700 ~/.ssh && echo '${line}' >> ~/.ssh/authorized_keys && chmod 600 ~/.ssh/authorized_keys`,
    });
    const own = keyFile('author', author.private);
    for (const t of [target, `${boxA}@127.0.0.1`]) {
      const r = await ssh(own, t, ['echo in'], { plain: !t.includes('.ssh.') });
      assert.equal(r.code, 255, `${t}: ${r.stdout}`);
      assert.match(r.stderr, /Permission denied \(publickey\)/);
    }
    assert.equal((await ssh(keyA, target, ['echo in'])).stdout, 'in\n');
  });

  test("a box from a snapshot whose authorized_keys holds an author's key: neither that key nor the source box's logs in", async () => {
    // As a blueprint author bakes a key: into the disk other boxes start from.
    const author = newKeyPair('author');
    await api.devboxes.executeAndAwaitCompletion(boxA, { command: `echo '${author.public}' >> ~/.ssh/authorized_keys` });
    const snap = await api.devboxes.snapshotDisk(boxA, { name: 'baked-key' });
    const copy = await api.devboxes.createAndAwaitRunning({ name: 'ssh-copy', snapshot_id: snap.id });
    const host = `user@${copy.id.replace('_', '-')}.ssh.127.0.0.1`;
    const baked = await api.devboxes.executeAndAwaitCompletion(copy.id, { command: 'grep -c author ~/.ssh/authorized_keys' });
    assert.equal(baked.stdout, '2\n');
    for (const key of [keyFile('author-2', author.private), keyA]) {
      const r = await ssh(key, host, ['echo in']);
      assert.equal(r.code, 255, r.stdout);
      assert.match(r.stderr, /Permission denied \(publickey\)/);
    }
    const k = await api.devboxes.createSSHKey(copy.id);
    const r = await ssh(keyFile('copy', k.ssh_private_key), `${k.ssh_user}@${k.url}`, ['hostname']);
    assert.equal(r.stdout, 'ssh-copy\n', r.stderr);
    await api.devboxes.shutdown(copy.id);
  });

  test("another account's key, issued for its own box, does not reach this account's box", async () => {
    const other = server.client({ apiKey: otherAccountKey('ssh-other') });
    const box = await other.devboxes.createAndAwaitRunning({ name: 'ssh-other' });
    const k = await other.devboxes.createSSHKey(box.id);
    const theirs = keyFile('other', k.ssh_private_key);
    const refused = await ssh(theirs, target, ['hostname']);
    assert.equal(refused.code, 255);
    assert.match(refused.stderr, /Permission denied/);
    assert.equal((await ssh(keyA, `${k.ssh_user}@${k.url}`, ['hostname'])).code, 255);
    assert.equal((await ssh(theirs, `${k.ssh_user}@${k.url}`, ['hostname'])).stdout, 'ssh-other\n');
    await other.devboxes.shutdown(box.id);
  });

  test("box A's key does not reach box B, whose own key does", async () => {
    const urlB = `user@${boxB.replace('_', '-')}.ssh.127.0.0.1`;
    const refused = await ssh(keyA, urlB, ['hostname']);
    assert.equal(refused.code, 255);
    assert.match(refused.stderr, /Permission denied/);
    const kB = await api.devboxes.createSSHKey(boxB);
    const ok = await ssh(keyFile('b', kB.ssh_private_key), `${kB.ssh_user}@${kB.url}`, ['hostname']);
    assert.equal(ok.stdout, 'ssh-b\n', ok.stderr);
  });

  test('a box whose user is root is reached as root', async () => {
    const box = await api.devboxes.createAndAwaitRunning({ name: 'ssh-root', launch_parameters: { user_parameters: { username: 'root', uid: 0 } } });
    const k = await api.devboxes.createSSHKey(box.id);
    assert.equal(k.ssh_user, 'root');
    const key = keyFile('root', k.ssh_private_key);
    const host = `${k.ssh_user}@${k.url}`;
    const r = await ssh(key, host, ['id -u; echo ~']);
    assert.equal(r.stdout, '0\n/root\n', r.stderr);

    // sftp and scp run the box's own sftp-server: root installs one (the host's, which needs only libc).
    await api.devboxes.uploadFile(box.id, { path: '/usr/lib/openssh/sftp-server', file: fs.createReadStream('/usr/lib/openssh/sftp-server') });
    await api.devboxes.executeAndAwaitCompletion(box.id, { command: 'chmod 755 /usr/lib/openssh/sftp-server' });
    const local = path.join(keyDir, 'payload.bin');
    const payload = crypto.randomBytes(300_000);
    fs.writeFileSync(local, payload);
    const back = path.join(keyDir, 'back.bin');
    const sftp = await sshTool('sftp', { key, port: tlsPort, args: ['-b', '-', host], input: `put ${local} up.bin\nget up.bin ${back}\n` });
    assert.equal(sftp.code, 0, sftp.stderr);
    assert.ok(fs.readFileSync(back).equals(payload));
    const scp = await sshTool('scp', { key, port: tlsPort, args: [local, `${host}:scp.bin`] });
    assert.equal(scp.code, 0, scp.stderr);
    const sum = await api.devboxes.executeAndAwaitCompletion(box.id, { command: 'sha256sum < scp.bin' });
    assert.equal(sum.stdout!.split(' ')[0], crypto.createHash('sha256').update(payload).digest('hex'));
    await api.devboxes.shutdown(box.id);
  });

  test('sftp to a box without an sftp-server says what to install', async () => {
    const r = await sshTool('sftp', { key: keyA, port: tlsPort, args: ['-b', '-', target], input: 'ls\n' });
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /no sftp-server; install it in the box/);
  });

  test('the plain port takes the devbox id as user name', async () => {
    const r = await ssh(keyA, `${boxA}@127.0.0.1`, ['id -un; hostname'], { plain: true });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'user\nssh-a\n');
    const wrongBox = await ssh(keyA, `${boxB}@127.0.0.1`, ['true'], { plain: true });
    assert.equal(wrongBox.code, 255);
  });

  test('a name that names no box is refused with a message', async () => {
    const r = await ssh(keyA, 'user@dbx-000000000nosuchbox00.ssh.127.0.0.1', ['true']);
    assert.equal(r.code, 255);
    assert.match(r.stderr, /no such devbox, or it is not running on this server/);
  });

  test('the same key works after a server restart', async () => {
    await server.restart();
    const r = await ssh(keyA, target, ['hostname']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'ssh-a\n');
  });

  test("the box's ~/.ssh neither grants nor revokes: emptied, or broken, the issued key logs in and a new one is issued", async () => {
    await api.devboxes.executeAndAwaitCompletion(boxA, { command: ': > ~/.ssh/authorized_keys' });
    assert.equal((await ssh(keyA, target, ['echo in'])).stdout, 'in\n');
    await api.devboxes.executeAndAwaitCompletion(boxA, { command: 'rm -rf ~/.ssh && echo not-a-dir > ~/.ssh' });
    const k = await api.devboxes.createSSHKey(boxA);
    const r = await ssh(keyFile('a-again', k.ssh_private_key), target, ['cat ~/.ssh']);
    assert.equal(r.stdout, 'not-a-dir\n', r.stderr);
  });

  test('a suspended box is refused with the message an unknown one gets (no status oracle before a login)', async () => {
    const k = await api.devboxes.createSSHKey(boxB);
    await api.devboxes.suspend(boxB);
    await api.devboxes.awaitSuspended(boxB);
    const r = await ssh(keyFile('b2', k.ssh_private_key), `${k.ssh_user}@${k.url}`, ['true']);
    assert.equal(r.code, 255);
    assert.match(r.stderr, /no such devbox, or it is not running on this server \(a suspended box is resumed with POST/);
    assert.doesNotMatch(r.stderr, /is suspended/);
  });
});

/** The first key of a further account, made with the operator CLI against this file's server. */
function otherAccountKey(name: string): string {
  const out = execFileSync(process.execPath, [DEVBOXD_BIN, 'accounts', 'create', name], {
    cwd: ROOT,
    env: { ...process.env, DEVBOXD_DATA_DIR: server.dataDir, DEVBOXD_LOG_LEVEL: 'silent', ...(db ? { DEVBOXD_DATABASE_URL: db.url } : {}) },
  }).toString();
  return out.trim().split('\n').at(-1)!;
}
