/**
 * A git server for tests: git's smart HTTP (`git http-backend`, run as a CGI per request) behind a node
 * HTTP server on 127.0.0.1, serving bare repositories at `/<owner>/<name>`. A private repository answers
 * 401 unless the request carries the token (Basic, any user name, as GitHub takes tokens). Pushes are off.
 */
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';

export interface GitServer {
  url: string;
  /** Requests served, as `METHOD path?query` (no credentials). */
  requests: string[];
  /** A repository from a tree of files (one commit on `main`); `branches` adds one commit each on top. */
  addRepo(owner: string, name: string, files: Record<string, string>, opts?: { token?: string; branches?: Record<string, Record<string, string>> }): void;
  close(): Promise<void>;
}

const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', '-c', 'init.defaultBranch=main', ...args], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });

export async function startGitServer(): Promise<GitServer> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'git-server-'));
  const tokens = new Map<string, string>();
  const requests: string[] = [];

  const handle = (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://x');
    requests.push(`${req.method} ${url.pathname}${url.search}`);
    const m = /^\/([^/]+)\/([^/]+)\//.exec(url.pathname);
    const token = m && tokens.get(`${m[1]}/${m[2]}`);
    if (token) {
      const given = /^Basic (.+)$/.exec(req.headers.authorization ?? '')?.[1];
      const password = given ? Buffer.from(given, 'base64').toString().split(':').slice(1).join(':') : undefined;
      if (password !== token) {
        res.writeHead(401, { 'www-authenticate': 'Basic realm="git"' });
        return res.end('authentication required');
      }
    }
    const cgi = spawn('git', ['http-backend'], {
      env: {
        PATH: process.env.PATH,
        GIT_PROJECT_ROOT: root,
        GIT_HTTP_EXPORT_ALL: '1',
        PATH_INFO: decodeURIComponent(url.pathname),
        QUERY_STRING: url.search.slice(1),
        REQUEST_METHOD: req.method ?? 'GET',
        CONTENT_TYPE: req.headers['content-type'] ?? '',
        ...(req.headers['content-length'] ? { CONTENT_LENGTH: req.headers['content-length'] } : {}),
        ...(req.headers['content-encoding'] ? { HTTP_CONTENT_ENCODING: req.headers['content-encoding'] } : {}),
        ...(req.headers['git-protocol'] ? { GIT_PROTOCOL: String(req.headers['git-protocol']) } : {}),
        REMOTE_ADDR: '127.0.0.1',
      },
    });
    req.pipe(cgi.stdin);
    cgi.stdin.on('error', () => undefined);
    let head = Buffer.alloc(0);
    let sent = false;
    cgi.stdout.on('data', (d: Buffer) => {
      if (sent) return void res.write(d);
      head = Buffer.concat([head, d]);
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) return;
      const headers: Record<string, string> = {};
      let status = 200;
      for (const line of head.subarray(0, end).toString().split('\r\n')) {
        const i = line.indexOf(':');
        const [k, v] = [line.slice(0, i).trim().toLowerCase(), line.slice(i + 1).trim()];
        if (k === 'status') status = Number(v.split(' ')[0]);
        else headers[k] = v;
      }
      res.writeHead(status, headers);
      sent = true;
      res.write(head.subarray(end + 4));
    });
    cgi.stdout.on('end', () => res.end());
  };

  const server = createServer(handle);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url,
    requests,
    addRepo(owner, name, files, opts = {}) {
      const work = fs.mkdtempSync(path.join(os.tmpdir(), 'git-work-'));
      const write = (tree: Record<string, string>) => {
        for (const [p, text] of Object.entries(tree)) {
          fs.mkdirSync(path.dirname(path.join(work, p)), { recursive: true });
          fs.writeFileSync(path.join(work, p), text);
        }
        git(work, 'add', '-A');
        git(work, 'commit', '-q', '-m', 'fixture');
      };
      git(work, 'init', '-q');
      write(files);
      for (const [branch, tree] of Object.entries(opts.branches ?? {})) {
        git(work, 'checkout', '-q', '-b', branch);
        write(tree);
        git(work, 'checkout', '-q', 'main');
      }
      fs.mkdirSync(path.join(root, owner), { recursive: true });
      git(root, 'clone', '-q', '--bare', work, path.join(owner, name));
      fs.rmSync(work, { recursive: true, force: true });
      if (opts.token) tokens.set(`${owner}/${name}`, opts.token);
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
      fs.rmSync(root, { recursive: true, force: true });
    },
  };
}
