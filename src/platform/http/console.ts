import fs from 'node:fs';
import path from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { INSTALL_ROOT } from '../../lib/install-root.js';

/** Where `node scripts/build-console.mjs` (npm start, npm test) writes the console's build. */
export const CONSOLE_DIR = path.join(INSTALL_ROOT, 'console', 'dist');

/**
 * The console's top-level pages (console/src/routes.ts). Each is answered with index.html, and the page's
 * own router draws it; every other path stays the API's, so an unknown `/v1/...` is still a JSON 404.
 */
export const CONSOLE_SECTIONS = [
  'devboxes',
  'snapshots',
  'blueprints',
  'secrets',
  'network-policies',
  'mcp-configs',
  'gateway-configs',
  'objects',
  'axons',
  'agents',
  'benchmarks',
  'benchmark-runs',
  'scenarios',
  'api-keys',
] as const;

/**
 * The page may load scripts and styles only from this server and talk only to it: the API key sits in the
 * tab's session storage, so nothing injected into a page may run or send it anywhere. Inline styles are
 * allowed because the terminal (xterm.js) and charts size their elements with them. `connect` adds origins the
 * page may call besides its own (where presigned URLs point).
 */
function csp(connect: string[]): string {
  return [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data: blob:",
    `connect-src ${["'self'", ...connect].join(' ')}`,
    "frame-ancestors 'none'",
    "base-uri 'none'",
    "form-action 'self'",
  ].join('; ');
}

/**
 * Serves the web console at `/`: hashed assets under /assets/ cached for a year, the page itself never cached
 * (a new build shows at the next load). Public: the page holds no data; it signs in with a key the user types,
 * and every call it makes is an API call with that key.
 */
export async function registerConsole(app: FastifyInstance, opts: { dir?: string; connect?: string[] } = {}): Promise<void> {
  const dir = opts.dir ?? CONSOLE_DIR;
  const policy = csp(opts.connect ?? []);
  const index = path.join(dir, 'index.html');
  const page = async (_req: unknown, reply: FastifyReply) => {
    let html: Buffer;
    try {
      html = await fs.promises.readFile(index);
    } catch {
      return reply
        .code(503)
        .type('text/plain; charset=utf-8')
        .send('The web console is not built. Run `npm run build:console` (npm start does it), then reload.\n');
    }
    return reply
      .type('text/html; charset=utf-8')
      .header('cache-control', 'no-cache')
      .header('content-security-policy', policy)
      .header('x-content-type-options', 'nosniff')
      .send(html);
  };
  const config = { auth: false };
  const schema = { hide: true };
  await app.register(async (scope) => {
    scope.addHook('onRoute', (r) => {
      r.config = { ...(r.config as object), auth: false };
    });
    await scope.register(fastifyStatic, {
      root: path.join(dir, 'assets'),
      prefix: '/assets/',
      // The folder may appear after start (a build while the server runs): checked per request, not at start.
      wildcard: true,
      immutable: true,
      maxAge: '365d',
      index: false,
      decorateReply: false,
    });
  });
  app.get('/', { config, schema }, page);
  for (const s of CONSOLE_SECTIONS) {
    app.get(`/${s}`, { config, schema }, page);
    app.get(`/${s}/*`, { config, schema }, page);
  }
}
