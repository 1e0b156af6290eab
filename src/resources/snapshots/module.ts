import path from 'node:path';
import type { Module } from '../../host.js';
import { blueprintsModule } from '../blueprints/index.js';
import { type Devbox, devboxesModule, devboxSuspendRoutes } from '../devboxes/index.js';
import { filesModule } from '../files/index.js';
import { layersModule } from '../layers/index.js';
import { snapshotLayersResolver, snapshotShutdownGuard } from './devbox-extensions.js';
import { snapshotRoutes } from './routes/index.js';
import { CAPTURE_JOB, SnapshotService } from './snapshot-service.js';
import { RESUME_JOB, SUSPEND_JOB, SuspendService } from './suspend-service.js';

declare module '../../platform/module/contract.js' {
  interface Services {
    snapshots: SnapshotService;
    suspend: SuspendService;
    /**
     * Where a module refuses resumes (a draining server: a guard throws the refusal) or places them on
     * another node (ElsewhereError, when `placing`).
     */
    resumeGuards: { add(guard: ResumeGuard): void };
  }
}

/** Runs before a resume: throws to refuse it here (see SuspendService.resume). */
export type ResumeGuard = (d: Devbox, placing: boolean) => void | Promise<void>;

/** Disk snapshots, suspend and resume (each a durable job), and the collection of layers nothing uses. */
export const snapshotsModule: Module = {
  name: 'snapshots',
  needs: [devboxesModule, filesModule, blueprintsModule, layersModule],
  build({ host, use }) {
    const { store, runtime, node, jobs } = host;
    const devboxes = use('devboxes');
    const blueprints = use('blueprints');
    const files = use('files');
    const snapshots = new SnapshotService(store.snapshots, store.devboxes, devboxes, runtime, host.logger.child({ component: 'snapshots' }), jobs, {
      layersDir: path.join(host.config.dataDir, 'layers'),
      node,
      layersInUse: () => blueprints.store.layersInUse(),
      blueprintLayers: async (id) => (await blueprints.store.getById(id))?.layers ?? [],
      blobs: use('layers'),
    });
    const guards: ResumeGuard[] = [];
    const suspend = new SuspendService(
      devboxes,
      store,
      use('lifecycle'),
      snapshots,
      host.logger.child({ component: 'suspend' }),
      jobs,
      (id) => files.stopWrites(id),
      async (d, placing) => {
        for (const guard of guards) await guard(d, placing);
      },
      {
        node,
        missingLayer: (layers) => use('layers').unavailable(layers),
      },
    );
    jobs.register(CAPTURE_JOB, { run: (job) => snapshots.settleCapture(job.subjectId), exhausted: (job, err) => snapshots.captureFailed(job.subjectId, err) });
    jobs.register(SUSPEND_JOB, { run: (job) => suspend.settleSuspend(job.subjectId), exhausted: (job, err) => suspend.suspendFailed(job.subjectId, err) });
    jobs.register(RESUME_JOB, { run: (job) => suspend.settleResume(job.subjectId), exhausted: (job, err) => suspend.resumeFailed(job.subjectId, err) });
    const ext = use('devboxExtensions');
    ext.resolver(snapshotLayersResolver(() => snapshots));
    ext.shutdownGuard(snapshotShutdownGuard(() => snapshots));
    ext.idleSuspender((d) => suspend.suspendIdle(d));
    return { snapshots, suspend, resumeGuards: { add: (guard: ResumeGuard) => void guards.push(guard) } };
  },
  async routes(app, s) {
    await app.register(devboxSuspendRoutes, { devboxes: s.devboxes, suspend: s.suspend });
    await app.register(snapshotRoutes, { snapshots: s.snapshots });
  },
  start: {
    // Snapshots caught in progress and devboxes caught suspending are settled by their jobs (resumed before
    // this phase), before the layer collection and the supervisor's reconcile look at them.
    async settle(s, host) {
      await s.snapshots.reconcile();
      await s.suspend.reconcile(host.node);
      s.snapshots.startCollector();
    },
  },
  close: (s) => s.snapshots.stop(),
};
