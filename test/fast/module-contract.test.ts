import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Host } from '../../src/host.js';
import { createLogger } from '../../src/lib/logger.js';
import { ConfigError } from '../../src/platform/config-error.js';
import { compose, moduleOrder, type ResourceModule } from '../../src/platform/module/index.js';
import { MODULES } from '../../src/resources/index.js';
import { widgetsModule } from '../fixtures/widgets-module.js';
import { answers, buildFastApp, type FastApp } from '../helpers/app.js';

// What issue 25 asks of a module: a resource is its folder and one line in a list of modules.

describe('a module from test/, registered by one line', () => {
  let f: FastApp;
  const { ok, bad } = answers(() => f);
  before(async () => {
    f = await buildFastApp({ env: { DEVBOXD_WIDGET_GREETING: 'good day' }, modules: [...MODULES, widgetsModule] });
  });
  after(() => f.close());

  test('serves its routes, behind the auth of every route', async () => {
    assert.deepEqual(await ok({ method: 'GET', url: '/v1/widgets/greeting' }), { greeting: 'good day' });
    assert.equal((await f.call({ method: 'GET', url: '/v1/widgets/greeting', key: null })).statusCode, 401);
    await bad({ method: 'POST', url: '/v1/widgets', payload: { name: '' } }, 400, /name/);
  });

  test('keeps its rows in its own table, migrated and recorded under its name', async () => {
    const w = await ok<{ id: string; name: string }>({ method: 'POST', url: '/v1/widgets', payload: { name: 'sprocket' } });
    assert.deepEqual(await ok({ method: 'GET', url: '/v1/widgets' }), { widgets: [w] });
    const { rows } = await f.deps.store.db.query<{ n: number }>("SELECT COUNT(*) AS n FROM module_migrations WHERE module = 'widgets'");
    assert.equal(Number(rows[0]?.n), 1);
  });

  test('the rest of the server is unchanged beside it', async () => {
    assert.equal((await f.call({ method: 'GET', url: '/v1/devboxes' })).statusCode, 200);
  });

  test("the shipped modules' boot steps run in the order of their stages: network, files, mounts, services, commands", () => {
    // Each module registers its own as it is built; the stages, not the build order, decide where each runs.
    // (The box-services link is made with the sandbox, before any step: a beforeCreate.)
    assert.deepEqual(
      f.deps.devboxExtensions.lifecycle.bootSteps.map((s) => s.name),
      ['network', 'file mounts', 'object mounts', 'agent mounts', 'code mounts', 'services', 'launch commands'],
    );
    assert.equal(f.deps.devboxExtensions.lifecycle.beforeCreate.length, 2, 'the layers this node lacks, and the box-services socket');
  });
});

test("a bad value of a module's setting stops the start, naming the variable", async () => {
  await assert.rejects(buildFastApp({ env: { DEVBOXD_WIDGET_GREETING: 'HELLO!' }, modules: [...MODULES, widgetsModule] }), (err: Error) => {
    assert.ok(err instanceof ConfigError);
    assert.match(err.message, /DEVBOXD_WIDGET_GREETING/);
    return true;
  });
});

describe('composition by declared needs', () => {
  type M = ResourceModule<Host, unknown>;
  const mod = (name: string, needs: M[] = [], provides: Record<string, unknown> = {}, uses: string[] = []): M => ({
    name,
    needs,
    build: ({ use }) => {
      for (const u of uses) use(u as never);
      return provides;
    },
  });

  test('builds each module after those it needs, otherwise in list order', () => {
    const a = mod('a');
    const b = mod('b', [a]);
    const c = mod('c');
    const d = mod('d', [c, b]);
    assert.deepEqual(
      moduleOrder([d, c, b, a]).map((m) => m.name),
      ['c', 'a', 'b', 'd'],
    );
    // The shipped list: repositories is listed before blueprints, but needs it.
    const shipped = moduleOrder(MODULES).map((m) => m.name);
    assert.ok(shipped.indexOf('blueprints') < shipped.indexOf('repositories'));
  });

  test('a cycle is refused, naming it; so is a need that is not registered, and a name given twice', () => {
    const needsOfA: M[] = [];
    const a = mod('a', needsOfA);
    const b = mod('b', [a]);
    needsOfA.push(b);
    assert.throws(() => moduleOrder([a, b]), /modules need each other in a cycle: a → b → a/);
    assert.throws(() => moduleOrder([mod('c', [mod('x')])]), /module c needs x, which is not registered/);
    assert.throws(() => moduleOrder([mod('a'), mod('a')]), /two modules are named a/);
  });

  test('a module reaches only services of modules it needs, and a name is provided once', async () => {
    const log = createLogger('silent');
    const host = {} as Host;
    const base = mod('base', [], { devboxes: 1 });
    const needing = mod('needing', [base], {}, ['devboxes']);
    const stranger = mod('stranger', [], {}, ['devboxes']);
    await compose([base, needing], host, new Map(), log);
    await assert.rejects(compose([base, stranger], host, new Map(), log), /module stranger uses devboxes of module base without needing base/);
    await assert.rejects(
      compose([mod('early', [], {}, ['devboxes']), base], host, new Map(), log),
      /module early uses devboxes, which no module built before it provides/,
    );
    await assert.rejects(compose([base, mod('again', [], { devboxes: 2 })], host, new Map(), log), /modules base and again both provide devboxes/);
    // Routes and start phases see the same: a service of a module not needed throws when read.
    const sneaky: M = { ...mod('sneaky'), routes: (_app, s) => s.devboxes };
    const c = await compose([base, sneaky], host, new Map(), log);
    await assert.rejects(c.routes({} as never), /module sneaky uses devboxes of module base without needing base/);
  });
});
