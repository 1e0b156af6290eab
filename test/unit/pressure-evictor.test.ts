import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createLogger } from '../../src/lib/logger.js';
import type { Devbox } from '../../src/resources/devboxes/types.js';
import { loadEvictionConfig, parseSize } from '../../src/resources/evictions/eviction-config.js';
import { PressureEvictor, type PressureEvictorDeps } from '../../src/resources/evictions/memory-pressure.js';

/** The memory-pressure policy over stand-ins: which box goes, and that it never evicts more than the pressure asks. */

const GiB = 1024 ** 3;

function setup(
  boxes: { id: string; busy: number; memory: number; pooled?: boolean }[],
  available = 0,
  snapshotting: string[] = [],
  relieve?: () => Promise<boolean>,
) {
  const evicted: string[] = [];
  let release: () => void = () => undefined;
  const active = new Map(boxes.map((b) => [b.id, { busy: b.busy, sandbox: { stats: async () => ({ memoryBytes: b.memory }) } }]));
  const inFlight = new Set<string>();
  const deps = {
    evictions: {
      evicting: (id: string) => inFlight.has(id),
      evict: (d: Devbox) => {
        evicted.push(d.id);
        inFlight.add(d.id);
        return new Promise<void>((r) => (release = () => (inFlight.delete(d.id), active.delete(d.id), r())));
      },
    },
    devboxes: {
      listByStatus: async () =>
        boxes.filter((b) => active.has(b.id)).map((b) => ({ id: b.id, accountId: b.pooled ? '' : 'acc_1', status: 'running' }) as Devbox),
    },
    lifecycle: { active },
    node: 'n',
    config: { file: '/proc/pressure/memory', trigger: 'some 1 2000000', availableMinBytes: 2 * GiB, graceMs: 0 },
    log: createLogger('silent'),
    available: async () => available,
    snapshotting: async (id: string) => snapshotting.includes(id),
    relieve,
  } as unknown as PressureEvictorDeps;
  return { evictor: new PressureEvictor(deps), evicted, release: () => release() };
}

test('the box freeing the most memory goes first, idle memory counting double', async () => {
  const s = setup([
    { id: 'idle-small', busy: 0, memory: 1 * GiB },
    { id: 'busy-huge', busy: 1, memory: 8 * GiB },
    { id: 'busy-mid', busy: 1, memory: 5 * GiB },
    { id: 'idle-big', busy: 0, memory: 3 * GiB },
  ]);
  for (const want of ['busy-huge', 'idle-big', 'busy-mid', 'idle-small']) {
    const p = s.evictor.onPressure('some');
    await new Promise((r) => setTimeout(r, 10));
    s.release();
    await p;
    assert.equal(s.evicted.at(-1), want);
  }
});

test('a box with a snapshot in progress is not chosen (its eviction would announce a suspend that never runs)', async () => {
  const s = setup(
    [
      { id: 'idle-big', busy: 0, memory: 3 * GiB },
      { id: 'idle-small', busy: 0, memory: 1 * GiB },
    ],
    0,
    ['idle-big'],
  );
  const p = s.evictor.onPressure('some');
  await new Promise((r) => setTimeout(r, 10));
  s.release();
  await p;
  assert.deepEqual(s.evicted, ['idle-small']);
});

test('events while an eviction is under way evict nothing more', async () => {
  const s = setup([
    { id: 'a', busy: 0, memory: GiB },
    { id: 'b', busy: 0, memory: GiB },
  ]);
  const first = s.evictor.onPressure('some');
  await new Promise((r) => setTimeout(r, 10));
  await Promise.all([s.evictor.onPressure('some'), s.evictor.onPressure('some')]);
  assert.equal(s.evicted.length, 1);
  s.release();
  await first;
  assert.equal(s.evicted.length, 1, 'no event since: nothing more goes');
});

test('with enough memory available a pressure event evicts nothing', async () => {
  const s = setup([{ id: 'a', busy: 0, memory: GiB }], 3 * GiB);
  await s.evictor.onPressure('some');
  assert.deepEqual(s.evicted, []);
});

test('configuration: off by default, sizes and percentages, bad values named', () => {
  const int = (_n: string, def: number) => def;
  const fail = (m: string) => new Error(m);
  const c = loadEvictionConfig({}, int, fail);
  assert.equal(c.memory, null);
  assert.equal(c.onShutdown, 'keep');
  assert.ok(c.shutdownTimeoutMs + c.graceMs < 90_000, "the SIGTERM drain ends well within systemd's default TimeoutStopSec");
  assert.equal(parseSize('512M'), 512 * 1024 ** 2);
  assert.equal(parseSize('2GiB'), 2 * GiB);
  assert.equal(parseSize('10%', 1000), 100);
  assert.equal(parseSize('lots'), undefined);
  assert.throws(() => loadEvictionConfig({ DEVBOXD_EVICT_ON_SHUTDOWN: 'drain' }, int, fail), /DEVBOXD_EVICT_ON_SHUTDOWN/);
  assert.throws(
    () => loadEvictionConfig({ DEVBOXD_EVICT_ON_MEMORY_PRESSURE: 'on', DEVBOXD_EVICT_MEMORY_PSI: 'some 3000000 2000000' }, int, fail),
    /DEVBOXD_EVICT_MEMORY_PSI/,
  );
  assert.throws(() => loadEvictionConfig({ DEVBOXD_EVICT_MEMORY_AVAILABLE_MIN: 'lots' }, int, fail), /DEVBOXD_EVICT_MEMORY_AVAILABLE_MIN/);
  assert.equal(loadEvictionConfig({ DEVBOXD_EVICT_ON_MEMORY_PRESSURE: 'on' }, int, fail).memory?.trigger, 'some 300000 2000000');
});

test("a warm pool's box ends first: an event it relieves evicts no tenant's box, and a pooled box is never suspended", async () => {
  let pooledLeft = 1;
  const relieved: number[] = [];
  const s = setup(
    [
      { id: 'pooled-huge', busy: 0, memory: 8 * GiB, pooled: true },
      { id: 'tenant', busy: 0, memory: GiB },
    ],
    0,
    [],
    async () => {
      relieved.push(pooledLeft);
      return pooledLeft-- > 0;
    },
  );
  await s.evictor.onPressure('some');
  assert.deepEqual(s.evicted, [], 'the pool gave a box up');
  const p = s.evictor.onPressure('some');
  await new Promise((r) => setTimeout(r, 10));
  s.release();
  await p;
  assert.deepEqual(s.evicted, ['tenant'], "the pool had none left: a tenant's box goes, never the pooled one");
  assert.equal(relieved.length, 2);
});
