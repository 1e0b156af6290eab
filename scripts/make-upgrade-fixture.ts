// Makes the upgrade fixtures under test/fixtures/upgrade/: a data dir (SQLite) and a plain pg_dump
// (PostgreSQL), each written by the devboxd of the checkout this runs in, holding rows of many modules made
// through the API. test/fast/upgrade.ts opens them with the code under test: the schema a database made by an
// older devboxd has must come out the same as a fresh database's, with its rows still there.
//
// The committed fixtures were made by cbc7420 (the code before schemas were written once for both databases):
// they stay as they are, the oldest layout an upgrade meets. The upgrade from the previous landed version is
// test/api/upgrade.test.ts, which starts that version itself (test/fixtures/upgrade/PREVIOUS names it).
// To make them again with that code (root: it starts a PostgreSQL cluster of its own):
//   git worktree add /tmp/old cbc7420 && cp -a node_modules /tmp/old/ && cp scripts/make-upgrade-fixture.ts /tmp/old/scripts/
//   (cd /tmp/old && node --import tsx scripts/make-upgrade-fixture.ts "$PWD/../<this checkout>/test/fixtures/upgrade")
//   git worktree remove --force /tmp/old
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { answers, buildFastApp, createAccount, uploadObject, type FastApp } from '../test/helpers/app.js';
import { startTestPostgres } from '../test/helpers/postgres.js';

const OUT = path.resolve(process.argv[2] ?? 'test/fixtures/upgrade');

/** What the fixture holds, by the names the upgrade test looks for (ids are the server's). */
export interface Made {
  keyB: string;
  ids: Record<string, string>;
}

/** One of each kind of row the API makes without a real sandbox (the stub runtime stands for it). */
async function populate(f: FastApp): Promise<Made> {
  const { ok } = answers<{ id: string }>(() => f);
  const keyB = await createAccount(f, 'team-upgrade');
  const post = async (url: string, payload: Record<string, unknown>, key?: string) => (await ok({ method: 'POST', url, payload, key })).id;
  const ids: Record<string, string> = {};
  ids.secret = await post('/v1/secrets', { name: 'UPGRADE_TOKEN', value: 'kept-across-upgrade' });
  ids.secretB = await post('/v1/secrets', { name: 'B_TOKEN', value: 'b' }, keyB);
  ids.policy = await post('/v1/network-policies', { name: 'upgrade-net', allow_all: true });
  ids.gateway = await post('/v1/gateway-configs', { name: 'upgrade-gw', endpoint: 'https://api.example.com', auth_mechanism: { type: 'bearer' } });
  ids.mcp = await post('/v1/mcp-configs', { name: 'upgrade-mcp', endpoint: 'https://mcp.example.com/mcp', allowed_tools: ['search_*'] });
  ids.object = await uploadObject(f, 'upgrade.txt', 'hello from before the upgrade');
  ids.agent = await post('/v1/agents', { name: 'upgrade-agent' });
  ids.axon = await post('/v1/axons', { name: 'upgrade-axon', metadata: { kept: 'yes' } });
  for (const n of [1, 2]) {
    await ok({
      method: 'POST',
      url: `/v1/axons/${ids.axon}/publish`,
      payload: { event_type: 'push', origin: 'EXTERNAL_EVENT', payload: `{"n":${n}}`, source: 'upgrade' },
    });
  }
  const contract = { scoring_function_parameters: [{ name: 'ok', weight: 1, scorer: { type: 'command_scorer', command: 'true' } }] };
  ids.scenario = await post('/v1/scenarios', { name: 'upgrade-scenario', input_context: { problem_statement: 'solve it' }, scoring_contract: contract });
  ids.benchmark = await post('/v1/benchmarks', { name: 'upgrade-bench', scenario_ids: [ids.scenario] });
  ids.devbox = (
    await ok({
      method: 'POST',
      url: '/v1/devboxes/create_and_await_running',
      payload: {
        name: 'upgrade-box',
        secrets: { TOKEN: 'UPGRADE_TOKEN' },
        tunnel: { auth_mode: 'authenticated' },
        launch_parameters: { network_policy_id: ids.policy },
      },
    })
  ).id;
  await ok({ method: 'POST', url: `/v1/devboxes/${ids.devbox}/create_ssh_key` });
  return { keyB, ids };
}

/** The data dir's files (SQLite's database, master key, blobs) without SQLite's journals or the runtime's scratch. */
function copyDataDir(from: string, to: string): void {
  fs.rmSync(to, { recursive: true, force: true });
  fs.cpSync(from, to, { recursive: true, filter: (src) => !/devboxd\.db-(wal|shm)$|\/runtime$/.test(src) });
}

async function sqliteFixture(): Promise<Made> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'devboxd-upgrade-'));
  const f = await buildFastApp({ env: { DEVBOXD_DATA_DIR: dataDir } });
  const made = await populate(f);
  // The last connection's close checkpoints the WAL into the file: the copy is the whole database.
  await f.close();
  copyDataDir(dataDir, path.join(OUT, 'sqlite'));
  fs.rmSync(dataDir, { recursive: true, force: true });
  return made;
}

async function postgresFixture(): Promise<Made> {
  const pg = await startTestPostgres();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'devboxd-upgrade-'));
  try {
    const url = await pg.database('upgrade');
    const f = await buildFastApp({ env: { DEVBOXD_DATA_DIR: dataDir, DEVBOXD_DATABASE_URL: url } });
    const made = await populate(f);
    await f.close();
    // Plain SQL without owners or grants: psql restores it into any empty database.
    const bin = path.join('/usr/lib/postgresql', fs.readdirSync('/usr/lib/postgresql').sort().at(-1)!, 'bin');
    const dump = execFileSync(path.join(bin, 'pg_dump'), ['--no-owner', '--no-privileges', '-d', url], { encoding: 'utf8', maxBuffer: 64 << 20 });
    // \restrict guards a psql restoring a dump it did not ask for; only psql 15.14 and later know it.
    fs.writeFileSync(path.join(OUT, 'postgres.sql'), dump.replace(/^\\(un)?restrict .*\n/gm, ''));
    copyDataDir(dataDir, path.join(OUT, 'postgres'));
    return made;
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
    await pg.stop();
  }
}

fs.mkdirSync(OUT, { recursive: true });
const made = { sqlite: await sqliteFixture(), postgres: await postgresFixture() };
fs.writeFileSync(path.join(OUT, 'made.json'), `${JSON.stringify(made, null, 2)}\n`);
console.log(`fixtures in ${OUT}: ${fs.readdirSync(OUT).join(', ')}`);
