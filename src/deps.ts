import path from 'node:path';
import type { Config } from './config.js';
import { AccountService } from './domain/accounts/account-service.js';
import { DevboxService } from './domain/devboxes/devbox-service.js';
import { Lifecycle } from './domain/devboxes/lifecycle.js';
import { StatusEvents } from './domain/devboxes/status-events.js';
import { Supervisor } from './domain/devboxes/supervisor.js';
import { TERMINAL } from './domain/devboxes/types.js';
import { DevboxLog } from './domain/executions/devbox-log.js';
import { ExecutionService } from './domain/executions/execution-service.js';
import { OutputBudget } from './domain/executions/output-budget.js';
import { FileService } from './domain/files/file-service.js';
import { SnapshotService } from './domain/snapshots/snapshot-service.js';
import { SuspendService } from './domain/snapshots/suspend-service.js';
import { Gate } from './lib/gate.js';
import type { Logger } from './lib/logger.js';
import type { RuntimeDriver } from './runtime/driver.js';
import { createRuntime } from './runtime/index.js';
import { openStore } from './store/open.js';
import type { IdempotencyStore, Store } from './store/types.js';

/** The composition root: every store, driver and service is built once, here, with explicit arguments. */
export interface Deps {
  store: Store;
  /** DEVBOXD_NODE_NAME: the devboxes, snapshots and x-request-id markers this server owns. */
  node: string;
  runtime: RuntimeDriver;
  accounts: AccountService;
  idempotency: IdempotencyStore;
  events: StatusEvents;
  lifecycle: Lifecycle;
  devboxes: DevboxService;
  executions: ExecutionService;
  files: FileService;
  snapshots: SnapshotService;
  suspend: SuspendService;
  /** Bounds the read_file_contents / write_file_contents requests held in memory at once. */
  fileContentsGate: Gate;
  /** Bounds the upload_file / download_file streams running at once (each holds stream buffers). */
  fileTransferGate: Gate;
  /** Stops background work and closes what was opened, in reverse order. Devboxes keep running. */
  close(): Promise<void>;
}

/** `runtime` replaces the shipped driver (fast tests pass a stub; never the server itself). */
export async function buildDeps(config: Config, logger: Logger, opts: { runtime?: RuntimeDriver } = {}): Promise<Deps> {
  const store = await openStore({ dataDir: config.dataDir, databaseUrl: config.databaseUrl });
  const node = config.nodeName;
  const runtime =
    opts.runtime ??
    createRuntime({
      dataDir: config.dataDir,
      imageDir: config.imageDir,
      logger: logger.child({ component: 'runtime' }),
      maxCommandsPerBox: config.maxExecutionsPerDevbox,
      maxCommands: config.maxExecutions,
    });
  await runtime.prepare();

  const accounts = new AccountService(store);
  const idempotency = store.idempotency;
  const events = new StatusEvents();
  const devboxStore = store.devboxes;
  const lifecycle = new Lifecycle(devboxStore, runtime, events, logger.child({ component: 'lifecycle' }));
  const devboxes = new DevboxService(devboxStore, lifecycle, events, logger.child({ component: 'devboxes' }), {
    maxCpuCores: config.maxCpuCores,
    maxMemoryGiB: config.maxMemoryGiB,
  }, node);
  const supervisor = new Supervisor(devboxStore, runtime, lifecycle, logger.child({ component: 'supervisor' }), node);

  // Services that plug into the lifecycle (executions, snapshots) are wired here, before reconcile.
  const devboxLog = new DevboxLog(store.logs, logger.child({ component: 'devbox-log' }));
  const outputs = new OutputBudget(path.join(config.dataDir, 'executions'), {
    streamMaxBytes: config.executionOutputMaxBytes,
    boxMaxBytes: config.executionOutputBoxMaxBytes,
    retentionMs: config.executionOutputRetentionSeconds * 1000,
  }, logger.child({ component: 'execution-output' }));
  const boxState = async (id: string) => {
    const d = await devboxStore.getById(id);
    return d && { ended: TERMINAL.has(d.status), endTimeMs: d.endTimeMs };
  };
  const executions = new ExecutionService(store.executions, devboxLog, devboxes, outputs, boxState, logger.child({ component: 'executions' }),
    node, config.maxExecutionsPerDevbox);
  lifecycle.setHooks(executions);
  await executions.reconcile();
  const files = new FileService(devboxes, logger.child({ component: 'files' }), { stallMs: config.uploadStallMs });
  const snapshots = new SnapshotService(store.snapshots, devboxStore, devboxes, runtime, logger.child({ component: 'snapshots' }), {
    layersDir: path.join(config.dataDir, 'layers'),
    node,
  });
  devboxes.setSnapshotLookup(snapshots);
  const suspend = new SuspendService(devboxes, devboxStore, lifecycle, snapshots, logger.child({ component: 'suspend' }), (id) => files.stopWrites(id));
  supervisor.setSuspender((d) => suspend.suspendIdle(d));
  await snapshots.reconcile();
  await suspend.reconcile(node);
  snapshots.startCollector();

  await supervisor.reconcile();
  await executions.reconcileOutput();
  supervisor.start();
  return {
    store,
    node,
    runtime,
    accounts,
    idempotency,
    events,
    lifecycle,
    devboxes,
    executions,
    files,
    snapshots,
    suspend,
    // One account holds at most half the slots and half the queue: others always get a turn.
    fileContentsGate: new Gate(
      config.fileContentsConcurrency,
      config.fileContentsQueue,
      Math.max(1, Math.floor(config.fileContentsConcurrency / 2)),
      Math.max(1, Math.floor(config.fileContentsQueue / 2)),
    ),
    fileTransferGate: new Gate(
      config.fileTransferConcurrency,
      config.fileTransferQueue,
      Math.max(1, Math.floor(config.fileTransferConcurrency / 2)),
      Math.max(1, Math.floor(config.fileTransferQueue / 2)),
    ),
    async close() {
      supervisor.stop();
      outputs.stop();
      snapshots.stop();
      await devboxLog.flush();
      await store.close();
      await runtime.close?.();
    },
  };
}
