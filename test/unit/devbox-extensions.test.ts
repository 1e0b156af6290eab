import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DevboxService } from '../../src/resources/devboxes/devbox-service.js';
import type { BootStep, DevboxExtensions, LifecycleExtensions } from '../../src/resources/devboxes/extensions.js';
import { Lifecycle } from '../../src/resources/devboxes/lifecycle.js';
import { snapshotShutdownGuard } from '../../src/resources/snapshots/devbox-extensions.js';
import { StatusEvents } from '../../src/resources/devboxes/status-events.js';
import type { Devbox } from '../../src/resources/devboxes/types.js';
import { DomainError, ERRORS } from '../../src/platform/errors.js';
import { createLogger } from '../../src/lib/logger.js';
import type { RuntimeDriver, Sandbox } from '../../src/runtime/driver.js';
import { openStore } from '../../src/resources/core-store.js';
import type { Store } from '../../src/platform/store/types.js';

// The devbox core's extension points, driven through the real services on a real SQLite store; the
// runtime is a stand-in (no root, no sandbox): what is under test is the order and the outcome of the
// contributions, not the box.
const log = createLogger('silent');
const sandboxes: string[] = [];
const runtime = {
  async create(spec: { id: string }): Promise<Sandbox> {
    sandboxes.push(spec.id);
    return { id: spec.id, died: new Promise(() => undefined), destroy: async () => undefined, stats: async () => ({}) } as unknown as Sandbox;
  },
} as unknown as RuntimeDriver;

describe('devbox extension points', () => {
  let dir: string;
  let store: Store;
  const accountId = 'acc_ext';
  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'ext-'));
    store = await openStore({ dataDir: dir });
    await store.accounts.createAccount({ id: accountId, name: 'ext', createTimeMs: Date.now() });
  });
  after(async () => {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });

  function build(life: Partial<LifecycleExtensions>, ext: Partial<DevboxExtensions>) {
    const events = new StatusEvents();
    const lifecycle = new Lifecycle(store.devboxes, runtime, events, log, { beforeCreate: [], bootSteps: [], onRunning: [], onStopped: [], ...life });
    const devboxes = new DevboxService(store, lifecycle, events, log, { maxCpuCores: 2, maxMemoryGiB: 4 }, 'n1', {
      resolvers: [],
      environment: [],
      enrichers: [],
      shutdownGuards: [],
      placers: [],
      ...ext,
    });
    const settled = (id: string) => devboxes.waitForStatus(accountId, id, ['running', 'failure', 'shutdown'], 5000);
    return { lifecycle, devboxes, settled };
  }

  it('boot steps that apply run in order, through initializing; running steps start once it runs; stop listeners hear the end', async () => {
    const order: string[] = [];
    const step = (name: string, applies: boolean): BootStep => ({
      name,
      applies: () => applies,
      run: async (ctx) => void order.push(`${name}:${ctx.devbox.id === ctx.sandbox.id}`),
    });
    const { devboxes, settled } = build(
      {
        bootSteps: [step('a', true), step('skipped', false), step('b', true)],
        onRunning: [(d) => void order.push(`running:${d.status}`)],
        onStopped: [(id) => void order.push(`stopped:${id}`)],
      },
      {},
    );
    const d = await devboxes.create(accountId, {});
    const now = (await settled(d.id))!;
    assert.equal(now.status, 'running');
    assert.deepEqual(
      now.stateTransitions.map((t) => t.status),
      ['provisioning', 'initializing', 'running'],
    );
    await devboxes.shutdown(accountId, d.id, false);
    assert.deepEqual(order, ['a:true', 'b:true', 'running:running', `stopped:${d.id}`]);
  });

  it('a failing boot step ends the box in failure/execution_failed with its message; later steps do not run', async () => {
    let later = false;
    const { devboxes, settled } = build(
      {
        bootSteps: [
          { name: 'attach network', applies: () => true, run: async () => Promise.reject(new Error('network policy np_1 not found')) },
          { name: 'later', applies: () => true, run: async () => void (later = true) },
        ],
      },
      {},
    );
    const d = (await settled((await devboxes.create(accountId, {})).id))!;
    assert.equal(d.status, 'failure');
    assert.equal(d.failureReason, 'execution_failed');
    assert.equal(d.stateTransitions.at(-1)?.failureReason, 'network policy np_1 not found');
    assert.equal(later, false);
  });

  it('create resolvers refuse before anything is recorded, or resolve layers; environment providers lose to the box own variables', async () => {
    const { devboxes, settled } = build(
      {},
      {
        resolvers: [
          async (_acc, input) => {
            if (input.secrets?.TOKEN) throw ERRORS.notFound('secret', input.secrets.TOKEN);
            return undefined;
          },
          async (_acc, input) => (input.snapshotId ? { layers: ['snp_x'], blueprintId: 'bpt_y', viewPart: 'tunnel' } : undefined),
        ],
        environment: [async () => ({ FROM_SECRET: 's3cr3t', SHARED: 'provider' })],
        enrichers: [{ part: 'tunnel', none: { tunnel: null }, enrich: async (d: Devbox) => ({ tunnel: { box: d.id } }) }],
      },
    );
    const before = (await store.devboxes.list(accountId, { limit: 100, includeTotalCount: true })).totalCount;
    await assert.rejects(
      devboxes.create(accountId, { secrets: { TOKEN: 'missing' } }),
      (e: DomainError) => e.code === 'not_found' && /secret missing/.test(e.message),
    );
    assert.equal((await store.devboxes.list(accountId, { limit: 100, includeTotalCount: true })).totalCount, before, 'nothing recorded');
    const d = await devboxes.create(accountId, { snapshotId: 'snp_x', environmentVariables: { SHARED: 'box' } });
    assert.deepEqual([d.layers, d.blueprintId], [['snp_x'], 'bpt_y']);
    await settled(d.id);
    assert.deepEqual(await devboxes.environmentOf(d), { FROM_SECRET: 's3cr3t', SHARED: 'box' });
    assert.deepEqual(await devboxes.enrichments(d), { tunnel: { box: d.id } });
    assert.deepEqual((await store.devboxes.getById(d.id))?.viewParts, ['tunnel'], 'the resolution view part is recorded');
    // A box without the part is not read for it; once the part is recorded (markView, as enable_tunnel does), it is.
    const plain = await devboxes.create(accountId, {});
    await settled(plain.id);
    assert.deepEqual(await devboxes.enrichments(plain), { tunnel: null });
    await store.devboxes.markView(plain.id, 'tunnel');
    await store.devboxes.markView(plain.id, 'tunnel');
    const marked = (await store.devboxes.getById(plain.id))!;
    assert.deepEqual(marked.viewParts, ['tunnel'], 'recorded once');
    assert.deepEqual(await devboxes.enrichments(marked), { tunnel: { box: plain.id } });
    // Rows from before the record (NULL) read every part.
    assert.deepEqual(await devboxes.enrichments({ ...plain, viewParts: null }), { tunnel: { box: plain.id } });
  });

  it('what a resolver persists is written in the transaction that inserts the box: a failing persist leaves no box', async () => {
    await store.db.script('CREATE TABLE IF NOT EXISTS test_bindings (devbox_id TEXT PRIMARY KEY REFERENCES devboxes(id), env TEXT NOT NULL)');
    const { devboxes, settled } = build(
      {},
      {
        resolvers: [
          async (_acc, input) => ({
            persist: async (tx, d) => {
              await tx.db.query('INSERT INTO test_bindings (devbox_id, env) VALUES (?, ?)', [d.id, 'TOKEN']);
              if (input.name === 'fail') throw ERRORS.invalid('binding refused');
            },
          }),
        ],
      },
    );
    const d = await devboxes.create(accountId, { name: 'ok' });
    const bound = await store.db.query('SELECT env FROM test_bindings WHERE devbox_id = ?', [d.id]);
    assert.deepEqual(bound.rows, [{ env: 'TOKEN' }]);
    await settled(d.id);
    const before = (await store.devboxes.list(accountId, { limit: 100, includeTotalCount: true })).totalCount;
    await assert.rejects(devboxes.create(accountId, { name: 'fail' }), /binding refused/);
    assert.equal((await store.devboxes.list(accountId, { limit: 100, includeTotalCount: true })).totalCount, before, 'no box');
    const rows = await store.db.query('SELECT COUNT(*) AS n FROM test_bindings');
    assert.equal(Number((rows.rows[0] as { n: number }).n), 1, 'no binding either');
  });

  it('a shutdown guard refuses a shutdown without force (409), and force passes it', async () => {
    const { devboxes, settled } = build({}, { shutdownGuards: [async (d) => `devbox ${d.id} is busy`] });
    const d = (await settled((await devboxes.create(accountId, {})).id))!;
    await assert.rejects(devboxes.shutdown(accountId, d.id, false), (e: DomainError) => e.code === 'conflict' && /is busy/.test(e.message));
    assert.equal((await devboxes.shutdown(accountId, d.id, true)).status, 'shutdown');
  });

  it('a refusal keeps its own code: a snapshot in progress answers snapshot_in_progress (409), returned or thrown', async () => {
    let inProgress = true;
    const guard = snapshotShutdownGuard(() => ({
      inProgressFor: async () => inProgress,
      layersOf: async () => ({ layers: [], sourceBlueprintId: null, availablePorts: null }),
    }));
    const thrower = async (d: Devbox) => {
      if (d.name === 'thrown') throw ERRORS.snapshotInProgress('thrown by the guard');
      return null;
    };
    const { devboxes, settled } = build({}, { shutdownGuards: [thrower, guard] });
    const d = (await settled((await devboxes.create(accountId, {})).id))!;
    const refused = (e: DomainError) => e.code === 'snapshot_in_progress' && e.status === 409 && /snapshot in progress; wait for it/.test(e.message);
    await assert.rejects(devboxes.shutdown(accountId, d.id, false), refused);
    assert.equal((await store.devboxes.getById(d.id))!.status, 'running', 'the refused shutdown left the box running');
    const t = (await settled((await devboxes.create(accountId, { name: 'thrown' })).id))!;
    await assert.rejects(
      devboxes.shutdown(accountId, t.id, false),
      (e: DomainError) => e.code === 'snapshot_in_progress' && /thrown by the guard/.test(e.message),
    );
    inProgress = false;
    assert.equal((await devboxes.shutdown(accountId, d.id, false)).status, 'shutdown', 'once the snapshot is over the guard lets it through');
    assert.equal((await devboxes.shutdown(accountId, t.id, true)).status, 'shutdown');
  });
});
