import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { JobRunner, type JobHandler } from '../../src/platform/jobs/job-runner.js';
import type { Job } from '../../src/platform/jobs/types.js';
import { createLogger } from '../../src/lib/logger.js';
import { openStore } from '../../src/resources/core-store.js';
import type { Store } from '../../src/platform/store/types.js';

const log = createLogger('silent');
const until = async (cond: () => Promise<boolean>, ms = 5000) => {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
};

describe('JobRunner (on a real SQLite store)', () => {
  let dir: string;
  let store: Store;
  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'jobs-'));
    store = await openStore({ dataDir: dir });
  });
  after(async () => {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('runs a started job once and records it succeeded', async () => {
    const seen: string[] = [];
    const runner = new JobRunner(store.jobs, 'n1', { 'test.ok': async (j) => void seen.push(j.subjectId) }, log);
    const job = await runner.add('test.ok', 'subject-1');
    assert.equal((await store.jobs.get(job.id))!.state, 'pending', 'recorded before it starts');
    runner.start(job);
    await runner.settled(job.id);
    assert.deepEqual(seen, ['subject-1']);
    assert.deepEqual({ state: (await store.jobs.get(job.id))!.state, attempts: (await store.jobs.get(job.id))!.attempts }, { state: 'succeeded', attempts: 1 });
    await assert.rejects(runner.add('test.unknown', 'x'), /no handler/);
  });

  it('retries a failing job with back-off, and fails it for good once its attempts run out', async () => {
    let calls = 0;
    const flaky: JobHandler = async () => {
      if (++calls < 3) throw new Error(`attempt ${calls} failed`);
    };
    const runner = new JobRunner(store.jobs, 'n1', { flaky, broken: async () => Promise.reject(new Error('always')) }, log, {
      maxAttempts: 3,
      retryBaseMs: 10,
    });
    const a = await runner.add('flaky', 'a');
    runner.start(a);
    await until(async () => (await store.jobs.get(a.id))!.state === 'succeeded');
    assert.equal(calls, 3);
    const got = (await store.jobs.get(a.id))!;
    assert.equal(got.attempts, 3);
    const b = await runner.add('broken', 'b');
    runner.start(b);
    await until(async () => (await store.jobs.get(b.id))!.state === 'failed');
    assert.deepEqual([(await store.jobs.get(b.id))!.attempts, (await store.jobs.get(b.id))!.lastError], [3, 'always']);
    runner.stop();
  });

  it('at start, resumes the jobs a crash cut (running) or left pending, of this node only, in order', async () => {
    // A previous server process: it added and claimed one job, added another, then died.
    const before = new JobRunner(store.jobs, 'n2', { work: async () => new Promise<void>(() => undefined) }, log);
    const cut = await before.add('work', 'first');
    await store.jobs.claim(cut.id, 'n2', Date.now());
    const waiting = await before.add('work', 'second');
    const elsewhere = await new JobRunner(store.jobs, 'n3', { work: async () => undefined }, log).add('work', 'other');
    const ran: Job[] = [];
    const after = new JobRunner(store.jobs, 'n2', { work: async (j) => void ran.push(j) }, log);
    await after.resume();
    assert.deepEqual(
      ran.map((j) => j.subjectId),
      ['first', 'second'],
    );
    assert.equal(ran[0]!.attempts, 2, 'the cut run counts as an attempt');
    for (const j of [cut, waiting]) assert.equal((await store.jobs.get(j.id))!.state, 'succeeded');
    assert.equal((await store.jobs.get(elsewhere.id))!.state, 'pending', "another node's job is not this server's to run");
  });

  it('a deferred job runs at its time, not before, also when a new runner resumes it', async () => {
    const ran: number[] = [];
    const handlers = { 'test.later': async () => void ran.push(Date.now()) };
    const runner = new JobRunner(store.jobs, 'n1', handlers, log);
    const at = Date.now() + 300;
    const job = await runner.add('test.later', 'later-1', undefined, { runAfterMs: at });
    runner.start(job);
    await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(ran, [], 'not run before its time');
    await until(async () => (await store.jobs.get(job.id))!.state === 'succeeded');
    assert.ok(ran[0]! >= at);

    // Recorded by one runner, resumed by the next (a restart): still held until its time.
    const first = new JobRunner(store.jobs, 'n1', handlers, log);
    const at2 = Date.now() + 300;
    const job2 = await first.add('test.later', 'later-2', undefined, { runAfterMs: at2 });
    first.stop();
    const second = new JobRunner(store.jobs, 'n1', handlers, log);
    await second.resume();
    assert.equal((await store.jobs.get(job2.id))!.state, 'pending');
    await until(async () => (await store.jobs.get(job2.id))!.state === 'succeeded');
    assert.ok(ran[1]! >= at2);
    second.stop();
  });
  it('at start, due jobs of background kinds run after resume returns, a few at a time; the others before', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let running = 0;
    let most = 0;
    const done: string[] = [];
    const handlers = {
      'bg.slow': async (j: Job) => {
        most = Math.max(most, ++running);
        await gate;
        running--;
        done.push(j.subjectId);
      },
      'fg.quick': async (j: Job) => void done.push(j.subjectId),
    };
    const first = new JobRunner(store.jobs, 'n-bg', handlers, log);
    const jobs: Job[] = [];
    for (let i = 0; i < 10; i++) jobs.push(await first.add('bg.slow', `bg-${i}`));
    const fg = await first.add('fg.quick', 'fg');
    const second = new JobRunner(store.jobs, 'n-bg', handlers, log, { background: ['bg.slow'] });
    const returned = await Promise.race([second.resume().then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 3000))]);
    assert.ok(returned, 'resume returned while background jobs still run');
    assert.deepEqual(done, ['fg'], 'the foreground job ran before resume returned; the background ones wait');
    assert.equal((await store.jobs.get(fg.id))!.state, 'succeeded');
    await until(async () => running === 4);
    release();
    await until(async () => (await Promise.all(jobs.map(async (j) => (await store.jobs.get(j.id))!.state))).every((st) => st === 'succeeded'));
    assert.equal(most, 4, 'at most four background jobs at once');
    assert.equal(done.length, 11);
    second.stop();
  });

  it('at start, background jobs of one kind that hold their workers do not hold back another kind', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const done: string[] = [];
    const handlers = {
      'bg.long': async () => gate,
      'bg.other': async (j: Job) => void done.push(j.subjectId),
    };
    const first = new JobRunner(store.jobs, 'n-kinds', handlers, log);
    for (let i = 0; i < 6; i++) await first.add('bg.long', `long-${i}`);
    const other = await first.add('bg.other', 'other');
    const second = new JobRunner(store.jobs, 'n-kinds', handlers, log, { background: ['bg.long', 'bg.other'] });
    await second.resume();
    await until(async () => (await store.jobs.get(other.id))!.state === 'succeeded', 3000);
    assert.deepEqual(done, ['other']);
    release();
    second.stop();
  });
});
