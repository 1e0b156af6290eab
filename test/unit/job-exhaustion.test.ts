import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { JobRunner } from '../../src/platform/jobs/job-runner.js';
import { createLogger } from '../../src/lib/logger.js';
import { openStore } from '../../src/resources/core-store.js';
import type { Store } from '../../src/platform/store/types.js';
import { DevboxService } from '../../src/resources/devboxes/devbox-service.js';
import { Lifecycle } from '../../src/resources/devboxes/lifecycle.js';
import { StatusEvents } from '../../src/resources/devboxes/status-events.js';
import { CAPTURE_JOB, SnapshotService } from '../../src/resources/snapshots/snapshot-service.js';
import { RESUME_JOB, SUSPEND_JOB, SuspendService } from '../../src/resources/snapshots/suspend-service.js';
import type { RuntimeDriver, Sandbox } from '../../src/runtime/driver.js';
import { snapshot } from '../store/fixtures.js';

// A durable job that fails its last attempt settles its subject for good (the wiring of deps.ts, over the
// real services and a real SQLite store; the runtime is a stand-in). Each job's work fails on every attempt
// here; what is under test is where the subject ends.
const log = createLogger('silent');
const destroyed: string[] = [];
let createHangs = false;
const runtime = {
  async create(spec: { id: string }): Promise<Sandbox> {
    if (createHangs) return new Promise(() => undefined);
    return {
      id: spec.id,
      died: new Promise(() => undefined),
      destroy: async () => void destroyed.push(spec.id),
      stats: async () => ({}),
    } as unknown as Sandbox;
  },
  remove: async () => undefined,
} as unknown as RuntimeDriver;

const until = async (cond: () => Promise<boolean>, ms = 5000) => {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
};

describe('a durable job that fails its last attempt', () => {
  let dir: string;
  let store: Store;
  const accountId = 'acc_jobs';
  let lifecycle: Lifecycle;
  let devboxes: DevboxService;
  let snapshots: SnapshotService;
  let suspend: SuspendService;
  let jobs: JobRunner;
  const attempts: Record<string, number> = {};
  const failing = (kind: string) => async () => {
    attempts[kind] = (attempts[kind] ?? 0) + 1;
    throw new Error(`${kind} broke`);
  };

  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'jobs-exhausted-'));
    store = await openStore({ dataDir: dir });
    await store.accounts.createAccount({ id: accountId, name: 'jobs', createTimeMs: Date.now() });
    const events = new StatusEvents();
    lifecycle = new Lifecycle(store.devboxes, runtime, events, log, { beforeCreate: [], bootSteps: [], onRunning: [], onStopped: [] });
    devboxes = new DevboxService(store, lifecycle, events, log, { maxCpuCores: 2, maxMemoryGiB: 4 }, 'n1', {
      resolvers: [],
      environment: [],
      enrichers: [],
      shutdownGuards: [],
      placers: [],
    });
    jobs = new JobRunner(
      store.jobs,
      'n1',
      {
        [CAPTURE_JOB]: { run: failing(CAPTURE_JOB), exhausted: (j, err) => snapshots.captureFailed(j.subjectId, err) },
        [SUSPEND_JOB]: { run: failing(SUSPEND_JOB), exhausted: (j, err) => suspend.suspendFailed(j.subjectId, err) },
        [RESUME_JOB]: { run: failing(RESUME_JOB), exhausted: (j, err) => suspend.resumeFailed(j.subjectId, err) },
      },
      log,
      { maxAttempts: 3, retryBaseMs: 5 },
    );
    snapshots = new SnapshotService(store.snapshots, store.devboxes, devboxes, runtime, log, jobs, { node: 'n1' });
    suspend = new SuspendService(devboxes, store, lifecycle, snapshots, log, jobs);
  });
  after(async () => {
    jobs.stop();
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });

  const runningBox = async () => {
    const d = await devboxes.create(accountId, {});
    return (await devboxes.waitForStatus(accountId, d.id, ['running'], 5000))!;
  };

  it('suspend: the box ends in failure with the reason (not left suspending), and its sandbox goes', async () => {
    const d = await runningBox();
    const job = await jobs.add(SUSPEND_JOB, d.id);
    await lifecycle.transition(d.id, ['running'], 'suspending');
    jobs.start(job);
    await until(async () => (await store.jobs.get(job.id))!.state === 'failed');
    const now = (await store.devboxes.getById(d.id))!;
    assert.equal(attempts[SUSPEND_JOB], 3, 'every attempt ran first');
    assert.equal(now.status, 'failure');
    assert.equal(now.failureReason, 'execution_failed');
    assert.equal(now.stateTransitions.at(-1)?.failureReason, `suspend failed: ${SUSPEND_JOB} broke`);
    assert.ok(destroyed.includes(d.id), 'the sandbox was destroyed');
  });

  it('resume: the box ends in failure with the reason (not left resuming)', async () => {
    const d = await runningBox();
    await lifecycle.transition(d.id, ['running'], 'suspending');
    await lifecycle.transition(d.id, ['suspending'], 'suspended');
    createHangs = true; // the boot never ends: only the job's exhaustion can settle the box
    try {
      const v = await suspend.resume(accountId, d.id);
      assert.equal(v.status, 'resuming');
      const job = (await store.jobs.listOpen('n1')).find((j) => j.subjectId === d.id && j.kind === RESUME_JOB);
      assert.ok(job, 'the resume job was recorded with the transition');
      await until(async () => (await store.jobs.get(job.id))!.state === 'failed');
    } finally {
      createHangs = false;
    }
    const now = (await store.devboxes.getById(d.id))!;
    assert.equal(now.status, 'failure');
    assert.equal(now.stateTransitions.at(-1)?.failureReason, `resume failed: ${RESUME_JOB} broke`);
  });

  it('a resume that loses its transition records no job', async () => {
    const d = await runningBox();
    await assert.rejects(suspend.resume(accountId, d.id), /is running, not suspended/);
    assert.equal((await store.jobs.listOpen('n1')).filter((j) => j.subjectId === d.id).length, 0);
  });

  it('snapshot capture: the snapshot ends in error with the reason (not left in progress), so the box snapshots again', async () => {
    const d = await runningBox();
    const s = snapshot(d, { status: 'in_progress', node: 'n1' });
    const job = await jobs.add(CAPTURE_JOB, s.id);
    await store.snapshots.insert(s);
    jobs.start(job);
    await until(async () => (await store.jobs.get(job.id))!.state === 'failed');
    const now = (await store.snapshots.getById(s.id))!;
    assert.equal(now.status, 'error');
    assert.equal(now.errorMessage, `the snapshot failed: ${CAPTURE_JOB} broke`);
    assert.equal(await snapshots.inProgressFor(d.id), false);
  });
});
