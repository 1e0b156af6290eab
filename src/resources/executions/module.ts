import path from 'node:path';
import type { Module } from '../../host.js';
import { devboxesModule, TERMINAL } from '../devboxes/index.js';
import { BoxJobs } from './box-jobs.js';
import { executionExtensions } from './devbox-extensions.js';
import { type ExecutionConfig, loadExecutionConfig } from './config.js';
import { DevboxLog } from './devbox-log.js';
import { ExecutionService } from './execution-service.js';
import { OutputBudget } from './output-budget.js';
import { OutputStorage } from './output-storage.js';
import { executionRoutes } from './routes/index.js';

declare module '../../platform/module/contract.js' {
  interface Services {
    executions: ExecutionService;
    /** The devbox log (launch commands, entrypoint, services): written by whatever runs in a box. */
    devboxLog: DevboxLog;
    /** Commands run by devboxd itself in a box (scoring), with the same output handling as executions. */
    boxJobs: BoxJobs;
    executionOutputs: OutputBudget;
  }
}

/** Executions (their output spooled, sealed into the blob store, bounded per stream and per box) and the devbox log. */
export const executionsModule: Module<ExecutionConfig> = {
  name: 'executions',
  needs: [devboxesModule],
  config: loadExecutionConfig,
  async build({ host, config, use }) {
    const { store, logger } = host;
    const devboxLog = new DevboxLog(store.logs, logger.child({ component: 'devbox-log' }));
    const outputs = new OutputBudget(
      new OutputStorage(path.join(host.config.dataDir, 'executions'), host.blobs),
      {
        streamMaxBytes: config.executionOutputMaxBytes,
        boxMaxBytes: config.executionOutputBoxMaxBytes,
        retentionMs: config.executionOutputRetentionSeconds * 1000,
      },
      logger.child({ component: 'execution-output' }),
    );
    const boxState = async (id: string) => {
      const d = await store.devboxes.getById(id);
      return d && { ended: TERMINAL.has(d.status), endTimeMs: d.endTimeMs };
    };
    const boxJobs = new BoxJobs(outputs);
    const executions = new ExecutionService(
      store.executions,
      devboxLog,
      use('devboxes'),
      boxJobs,
      boxState,
      logger.child({ component: 'executions' }),
      host.node,
      host.config.maxExecutionsPerDevbox,
    );
    // Launch commands run last of the boot steps; the entrypoint once running.
    const processes = executionExtensions(() => executions.processes);
    const ext = use('devboxExtensions');
    ext.bootStep(processes.bootStep, 'processes');
    ext.onRunning(processes.onRunning);
    ext.onStopped(processes.onStopped);
    await executions.reconcile();
    return { executions, devboxLog, boxJobs, executionOutputs: outputs };
  },
  routes: (app, s) => app.register(executionRoutes, { executions: s.executions }),
  start: { adopt: (s) => s.executions.reconcileOutput() },
  async close(s) {
    s.executionOutputs.stop();
    await s.devboxLog.flush();
  },
};
