import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { runCli } from '../../src/cli/index.js';
import { loadConfig } from '../../src/config.js';
import { BY_NAME, INTERNAL, settingsEnvironment, withReference } from '../../src/config-file/index.js';
import { ROOT } from '../helpers/paths.js';

/**
 * The config file (README "Configuration"): a file's values reach the settings under the environment's,
 * `config show` says where each came from with secrets masked, `config check` names each problem with its
 * line, and the README's reference and the code's variables agree with the settings table. In this process
 * (runCli with an environment of the test's own).
 */
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'devboxd-config-'));
after(() => fs.rmSync(dir, { recursive: true, force: true }));

const ADMIN_KEY = 'ak_configfile0123456789';
const DB_PASSWORD = 'hunter2-config';

function file(name: string, text: string): string {
  const p = path.join(dir, name);
  fs.writeFileSync(p, text, { mode: 0o600 });
  return p;
}

const good = file(
  'good.yaml',
  `# a team's server
server:
  host: 127.0.0.9
  port: 4100
  admin_key: ${ADMIN_KEY}
storage:
  data_dir: ${path.join(dir, 'data')}
  database_url: postgres://devboxd:${DB_PASSWORD}@db.example:5432/devboxd
network:
  egress_deny: [10.1.0.0/16, 10.2.0.0/16]
objects:
  object_uploads_max: 7
`,
);

async function cli(env: Record<string, string>, ...args: string[]) {
  let out = '';
  let err = '';
  const code = await runCli(args, { out: (s) => (out += s), err: (s) => (err += s) }, env);
  return { code, out, err };
}

test('config show: each value from the file with its line, a variable overriding one, the rest defaults; secrets masked', async () => {
  const shown = await cli({ DEVBOXD_PORT: '4200' }, 'config', 'show', '--json', '--config', good);
  assert.equal(shown.code, 0, shown.err);
  const rows = new Map((JSON.parse(shown.out) as { variable: string; value: string | null; source: string; line?: number }[]).map((r) => [r.variable, r]));
  assert.equal(rows.size, BY_NAME.size);
  assert.deepEqual(rows.get('DEVBOXD_HOST'), {
    variable: 'DEVBOXD_HOST',
    key: 'server.host',
    value: '127.0.0.9',
    default: '127.0.0.1',
    source: 'file',
    line: 3,
  });
  assert.equal(rows.get('DEVBOXD_PORT')!.value, '4200');
  assert.equal(rows.get('DEVBOXD_PORT')!.source, 'env');
  assert.equal(rows.get('DEVBOXD_EGRESS_DENY')!.value, '10.1.0.0/16,10.2.0.0/16');
  assert.equal(rows.get('DEVBOXD_OBJECT_UPLOADS_MAX')!.line, 12);
  assert.deepEqual([rows.get('DEVBOXD_LOG_LEVEL')!.value, rows.get('DEVBOXD_LOG_LEVEL')!.source], [null, 'default']);
  assert.equal(rows.get('DEVBOXD_ADMIN_KEY')!.value, '********');
  assert.equal(rows.get('DEVBOXD_DATABASE_URL')!.value, 'postgres://devboxd:****@db.example:5432/devboxd');
  // The same from DEVBOXD_CONFIG and as text, with a secret from the environment: no secret is printed.
  const text = await cli({ DEVBOXD_CONFIG: good, DEVBOXD_SECRET_KEY: Buffer.alloc(32, 7).toString('base64') }, 'config', 'show');
  assert.equal(text.code, 0, text.err);
  assert.match(text.out, /^VARIABLE\tKEY\tVALUE\tSOURCE\n/);
  assert.match(text.out, /\nDEVBOXD_PORT\tserver\.port\t4100\tfile:4\n/);
  assert.match(text.out, /\nDEVBOXD_SECRET_KEY\tstorage\.secret_key\t\*{8}\tenv\n/);
  for (const secret of [ADMIN_KEY, DB_PASSWORD, Buffer.alloc(32, 7).toString('base64')]) assert.ok(!text.out.includes(secret) && !shown.out.includes(secret));
});

test('serve reads the file: the settings and modules parse its values, a variable overrides it, the children get no file', () => {
  const { env } = settingsEnvironment({ DEVBOXD_CONFIG: good, DEVBOXD_HOST: '127.0.0.10' }, undefined, assert.fail);
  const config = loadConfig(env);
  assert.equal(config.port, 4100);
  assert.equal(config.host, '127.0.0.10');
  assert.equal(config.adminKey, ADMIN_KEY);
  assert.deepEqual(config.network.egressDeny, ['10.1.0.0/16', '10.2.0.0/16']);
  assert.equal(config.env.DEVBOXD_OBJECT_UPLOADS_MAX, '7');
  assert.equal(config.env.DEVBOXD_CONFIG, undefined);
});

test('an operator command with --config works on the data dir the file names', async () => {
  // An empty variable wins over the file too: SQLite in the file's data dir rather than its PostgreSQL.
  const sqlite = { DEVBOXD_DATABASE_URL: '' };
  const made = await cli(sqlite, '--config', good, 'accounts', 'create', 'config-team');
  assert.equal(made.code, 0, made.err);
  assert.ok(fs.existsSync(path.join(dir, 'data')));
  assert.equal((await cli(sqlite, 'keys', 'list', 'config-team', `--config=${good}`)).code, 0);
  // The client commands read no server settings: --config there is a usage error.
  const client = await cli({}, '--config', good, 'devbox', 'list');
  assert.equal(client.code, 2);
  assert.match(client.err, /takes no --config/);
});

test('config check names each problem with its line: unknown key, wrong type, out of range, misplaced, YAML syntax', async () => {
  const bad = file(
    'bad.yaml',
    `server:
  port: 70000
  prot: 4000
  body_limit: "10M"
  data_dir: ./data
network:
  box_subnet: 10.0.0.0/24
evictions:
  evict_grace_seconds: 10
`,
  );
  const r = await cli({}, 'config', 'check', bad);
  assert.equal(r.code, 1);
  assert.deepEqual(r.out.trim().split('\n'), [
    `${bad}:2: server.port: DEVBOXD_PORT must be an integer between 0 and 65535, got "70000"`,
    `${bad}:3: server.prot: no such setting (did you mean server.port?)`,
    `${bad}:4: server.body_limit: must be an integer, got a string ("10M")`,
    `${bad}:5: server.data_dir: data_dir belongs in section storage`,
    `${bad}:7: network.box_subnet: DEVBOXD_BOX_SUBNET must be an IPv4 network of /16 or larger, got "10.0.0.0/24"`,
  ]);
  assert.match(r.err, /5 problems/);
  // A variable's bad value is the environment's, not the file's line.
  const env = await cli({ DEVBOXD_BODY_LIMIT: '1' }, 'config', 'check', good);
  assert.equal(env.code, 1);
  assert.match(env.out, /^environment: DEVBOXD_BODY_LIMIT must be an integer between 1024/);
  const syntax = await cli({}, 'config', 'check', file('syntax.yaml', 'server:\n  port: 1\n host: a\n'));
  assert.equal(syntax.code, 1);
  assert.match(syntax.out, /syntax\.yaml:3: YAML: /);
  const ok = await cli({ DEVBOXD_PORT: '4300' }, 'config', 'check', `--config=${good}`);
  assert.equal(ok.code, 0, ok.out + ok.err);
  assert.match(ok.out, /good\.yaml: ok, 7 settings \(the environment overrides DEVBOXD_PORT\)/);
  // serve refuses a file with problems before it opens anything, listing them.
  await assert.rejects(cli({}, 'serve', '--config', bad), /bad\.yaml:3: server\.prot: no such setting/);
});

test('a file holding secrets that others may read gets a warning', async () => {
  const open = file('open.yaml', `server:\n  admin_key: ${ADMIN_KEY}\n`);
  fs.chmodSync(open, 0o644);
  const r = await cli({}, 'config', 'check', open);
  assert.equal(r.code, 0, r.out);
  assert.match(r.err, /holds secrets \(admin_key\) and others may read it: chmod 600/);
});

test("the README's reference is the settings table's, and the table holds every variable src/ reads", () => {
  const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  assert.ok(withReference(readme) === readme, 'README.md differs from the settings table: node --import tsx scripts/config-docs.ts');
  const read = new Set<string>();
  const srcDir = path.join(ROOT, 'src');
  for (const f of fs.readdirSync(srcDir, { recursive: true }) as string[]) {
    if (!f.endsWith('.ts') || f.startsWith(`config-file${path.sep}`)) continue;
    // A name ending in `_` is a family (`DEVBOXD_S3_*`), not a variable.
    for (const m of fs.readFileSync(path.join(srcDir, f), 'utf8').matchAll(/DEVBOXD_[A-Z0-9_]+/g)) if (!m[0].endsWith('_')) read.add(m[0]);
  }
  const missing = [...read].filter((n) => !BY_NAME.has(n) && !(n in INTERNAL));
  assert.deepEqual(missing, [], 'variables src/ reads that src/config-file/sections/ lacks');
  const stale = [...BY_NAME.keys(), ...Object.keys(INTERNAL)].filter((n) => !read.has(n) && n !== 'DEVBOXD_CONFIG');
  assert.deepEqual(stale, [], 'settings nothing in src/ reads');
});
