// deploy/nginx/nginx.conf and deploy/caddy/Caddyfile in front of a real server (docs/operating.md, "TLS in
// front"): the SDK over HTTPS and HTTP/2, a command's stdout streamed line by line (when each line arrives),
// a tunnel by host name, a PTY WebSocket, a presigned upload and its URL, and (nginx) SSH on 443 by server name
// and the client's address in the access log. Self-signed certificates; Caddy with `tls internal` in place of
// its DNS challenge, which needs a DNS provider's module. Needs root, nginx with libnginx-mod-stream and caddy
// (apt-get install nginx libnginx-mod-stream caddy), and a network and mount namespace of its own (it binds
// 443 and points api.example.com at 127.0.0.1 in /etc/hosts):
// Run: unshare -n -m sh -c 'ip link set lo up; node --import tsx bench/proxies.ts'   (BENCH_PROXY=nginx|caddy|both)
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Runloop from '@runloop/api-client';
import { WebSocket } from 'ws';
import { ADMIN_KEY, DEVBOXD_BIN, ROOT, startTestServer } from '../test/helpers/server.js';

type Proxy = 'nginx' | 'caddy';
const PROXIES: Proxy[] = process.env.BENCH_PROXY === 'nginx' || process.env.BENCH_PROXY === 'caddy' ? [process.env.BENCH_PROXY] : ['nginx', 'caddy'];
const API = 'https://api.example.com';

// api.example.com is 127.0.0.1 through a hosts file bound over /etc/hosts, in the mount namespace the Run line
// makes, and unbound at the end.
const hostsDir = fs.mkdtempSync(path.join(os.tmpdir(), 'devboxd-hosts-'));
fs.writeFileSync(path.join(hostsDir, 'hosts'), '127.0.0.1 localhost api.example.com\n');
execFileSync('mount', ['--bind', path.join(hostsDir, 'hosts'), '/etc/hosts']);
// The certificates are self-signed: this process's clients and the CLI it starts accept them.
process.env.NODE_TLS_REJECT_UNAUTHORIZED = '0';

const server = await startTestServer({ DEVBOXD_TUNNEL_DOMAIN: 'example.com', DEVBOXD_WARM_POOL: '0', DEVBOXD_LOG_LEVEL: 'warn' });
const port = new URL(server.url).port;
const results: string[] = [];
const check = (proxy: Proxy, what: string, ok: boolean, detail = '') => results.push(`| ${proxy} | ${what} | ${ok ? 'ok' : 'FAILED'} | ${detail} |`);

/** Starts `proxy` with the repository's configuration, its names and paths pointed at `dir` and the server. */
async function start(proxy: Proxy, dir: string): Promise<() => void> {
  // One self-signed certificate for the API's name and the tunnels' wildcard, as the operator's would cover.
  const names = 'subjectAltName=DNS:api.example.com,DNS:*.tunnel.example.com';
  const req = 'req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=api.example.com'.split(' ');
  execFileSync('openssl', [...req, '-addext', names, '-keyout', `${dir}/privkey.pem`, '-out', `${dir}/fullchain.pem`], { stdio: 'ignore' });
  if (proxy === 'nginx') {
    const conf = fs
      .readFileSync(path.join(ROOT, 'deploy/nginx/nginx.conf'), 'utf8')
      .replaceAll('/etc/ssl/devboxd/', `${dir}/`)
      .replaceAll('/run/nginx.pid', `${dir}/nginx.pid`)
      .replaceAll('/run/nginx-devboxd-', `${dir}/sock-`)
      .replaceAll('/var/log/nginx/', `${dir}/`)
      .replaceAll('127.0.0.1:4000', `127.0.0.1:${port}`);
    fs.writeFileSync(`${dir}/nginx.conf`, conf);
    execFileSync('nginx', ['-c', `${dir}/nginx.conf`]);
    return () => spawnSync('nginx', ['-c', `${dir}/nginx.conf`, '-s', 'stop']);
  }
  const file = fs
    .readFileSync(path.join(ROOT, 'deploy/caddy/Caddyfile'), 'utf8')
    .replace(/\ttls \{\n[^\n]*\n\t\}/, '\ttls internal')
    .replace('{\n\temail', '{\n\tskip_install_trust\n\temail')
    .replaceAll('127.0.0.1:4000', `127.0.0.1:${port}`);
  fs.writeFileSync(`${dir}/Caddyfile`, file);
  const log = fs.openSync(`${dir}/caddy.log`, 'w');
  const caddy: ChildProcess = spawn('caddy', ['run', '--config', `${dir}/Caddyfile`, '--adapter', 'caddyfile'], {
    env: { ...process.env, XDG_DATA_HOME: dir, XDG_CONFIG_HOME: dir },
    stdio: ['ignore', log, log],
  });
  for (let i = 0; i < 50 && spawnSync('curl', ['-sk', '-o', '/dev/null', `${API}/healthz`]).status !== 0; i++) await new Promise((r) => setTimeout(r, 200));
  return () => caddy.kill();
}

async function run(proxy: Proxy): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `devboxd-${proxy}-`));
  // nginx's workers (www-data) connect to the sockets made here.
  fs.chmodSync(dir, 0o755);
  const stop = await start(proxy, dir);
  const api = new Runloop({ baseURL: API, bearerToken: ADMIN_KEY, maxRetries: 0 });
  try {
    const curl = (...args: string[]) => spawnSync('curl', ['-sk', '--max-time', '20', ...args], { encoding: 'utf8' });
    check(proxy, 'HTTP/2 to the client', /^HTTP\/2 200/.test(curl('-i', '--http2', `${API}/healthz`).stdout));
    const box = await api.devboxes.createAndAwaitRunning({ tunnel: { auth_mode: 'open' } });
    const sync = await api.devboxes.executeSync(box.id, { command: 'echo hi' });
    check(proxy, 'SDK create and execute_sync', box.status === 'running' && sync.stdout === 'hi\n');

    const started = await api.devboxes.executeAsync(box.id, { command: 'for i in 1 2 3; do echo $i; sleep 1; done' });
    const t0 = performance.now();
    const arrivals: number[] = [];
    for await (const chunk of await api.devboxes.executions.streamStdoutUpdates(box.id, started.execution_id)) {
      if (chunk.output) arrivals.push(Math.round(performance.now() - t0));
    }
    check(proxy, 'SSE, a line a second', arrivals.length >= 2 && arrivals[1]! - arrivals[0]! > 700, `arrived at ${arrivals.join(', ')} ms`);

    await api.devboxes.executeAsync(box.id, { command: 'cd /tmp && echo tunnelled > index.html && exec python3 -m http.server 8000' });
    await new Promise((r) => setTimeout(r, 1500));
    const host = `8000-${box.tunnel!.tunnel_key}.tunnel.example.com`;
    check(proxy, 'tunnel by host name', curl('--resolve', `${host}:443:127.0.0.1`, `https://${host}/index.html`).stdout.trim() === 'tunnelled');

    const pty = await api.devboxes.createPtyTunnel(box.id);
    const auth = { 'X-Runloop-Tunnel-Authorization': `Bearer ${pty.auth_token}` };
    const base = `${API}/tunnel/${pty.tunnel_key}/8080/pty/bench`;
    await fetch(base, { headers: auth });
    const ws = new WebSocket(`${base.replace('https:', 'wss:')}/attach`, { headers: auth });
    let screen = '';
    ws.on('message', (d: Buffer) => (screen += d.toString()));
    const opened = await new Promise<string>((resolve) => {
      ws.on('open', () => resolve('open'));
      ws.on('error', (e) => resolve(e.message));
    });
    ws.send('echo pty-$((6*7))\n');
    await new Promise((r) => setTimeout(r, 1500));
    check(proxy, 'PTY WebSocket', opened === 'open' && screen.includes('pty-42'), opened === 'open' ? '' : opened);
    ws.close();

    const uploadUrl = (await api.objects.create({ name: 'bench', content_type: 'text' })).upload_url!;
    const put = await fetch(uploadUrl, { method: 'PUT', body: 'x'.repeat(3 << 20) });
    check(proxy, 'presigned upload of 3 MiB', put.status === 200, `URL ${uploadUrl.slice(0, uploadUrl.indexOf('/', 8))}`);

    if (proxy === 'nginx') {
      const ssh = spawnSync(process.execPath, [DEVBOXD_BIN, 'devbox', 'ssh', box.id, '--', 'echo', 'ssh-ok'], {
        encoding: 'utf8',
        env: { ...process.env, RUNLOOP_BASE_URL: API, RUNLOOP_API_KEY: ADMIN_KEY },
        timeout: 30_000,
      });
      check(proxy, 'SSH over TLS on 443 by server name', ssh.stdout.trim() === 'ssh-ok', ssh.stdout.trim() === 'ssh-ok' ? '' : ssh.stderr.trim().slice(0, 120));
      const lines = fs.readFileSync(`${dir}/access.log`, 'utf8').trim().split('\n');
      check(
        proxy,
        "the client's address in the access log",
        lines.every((l) => l.startsWith('127.0.0.1 ')),
      );
    }
    await api.devboxes.shutdown(box.id);
  } finally {
    stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

try {
  for (const proxy of PROXIES) await run(proxy);
} finally {
  await server.stop();
  spawnSync('umount', ['/etc/hosts']);
  fs.rmSync(hostsDir, { recursive: true, force: true });
}
console.log('| proxy | what | result | detail |');
console.log('| --- | --- | --- | --- |');
for (const r of results) console.log(r);
