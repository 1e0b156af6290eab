import { newId } from '../../lib/ids.js';
import type { Gate } from '../../lib/gate.js';
import type { Logger } from '../../lib/logger.js';
import { DomainError } from '../../platform/errors.js';
import type { BoxServices } from '../../platform/boxlink/index.js';
import type { ResourceLimits, RuntimeDriver, Sandbox } from '../../runtime/driver.js';
import { DEFAULT_USER } from '../devboxes/index.js';
import { cloneFailure, cloneInBox, runInBox } from './clone.js';
import type { GitRelay } from './git-relay.js';
import { deriveManifest } from './manifest/derive.js';
import type { BlueprintRef, RepositoryService } from './repository-service.js';
import type { SqlRepositoryStore } from './sql-repository-store.js';
import { parseSurvey, SURVEY_MAX_BYTES, SURVEY_SCRIPT } from './survey.js';
import type { Inspection, RepositoryConnection } from './types.js';

export interface InspectionRunnerOptions {
  runtime: RuntimeDriver;
  boxServices: () => BoxServices;
  relay: GitRelay;
  /** DEVBOXD_BOX_SERVICES_PORT: where the relay answers inside the box. */
  servicesPort: number;
  limits: ResourceLimits;
  timeoutMs: number;
  gate: Gate;
  blueprint(accountId: string, id: string): Promise<BlueprintRef | undefined>;
  /** Fetches from the blob store the layers this node lacks (a blueprint built on another node). */
  ensureLocal(layers: readonly string[]): Promise<void>;
  log: Logger;
}

/** Where the repository lands in the inspection's box. */
const CHECKOUT = '/tmp/repo';

/**
 * Runs inspections: the handler of INSPECT_JOB. An inspection waits for a slot of the gate, then, in a
 * sandbox of its own (the connection's blueprint, else the default image), clones the repository through
 * the git relay and surveys it; the server derives the manifest from the survey. What the repository
 * causes (no access, a failed clone, a timeout) settles the inspection with a reason; only the server's own
 * failures throw (the job then retries, and settles it failed once its attempts are spent).
 */
export class InspectionRunner {
  private started = false;

  constructor(
    private readonly store: SqlRepositoryStore,
    private readonly repos: () => RepositoryService,
    private readonly opts: InspectionRunnerOptions,
  ) {}

  /** Inspections start once the server has started (the supervisor's reconcile removes stray sandboxes first). */
  markStarted(): void {
    this.started = true;
  }

  async run(inspectionId: string): Promise<void> {
    if (!this.started) throw new Error('the inspection resumes once the server has started');
    const i = await this.store.inspection(inspectionId);
    if (!i || i.status !== 'inspection_pending') return;
    const release = await this.opts.gate.enter();
    if (!release) throw new Error('the inspection queue is full');
    try {
      // Read again after the wait: the connection may have been deleted, its token changed.
      const r = await this.store.getById(i.repositoryId);
      if (!r) return;
      await this.inspect(i, r);
    } finally {
      release();
    }
  }

  /** The job failed for good: the inspection fails rather than stay pending. */
  async exhausted(inspectionId: string, error: string): Promise<void> {
    await this.store.settle(inspectionId, 'inspection_failed', { failureReason: `the inspection could not run: ${error}` });
  }

  private async inspect(i: Inspection, r: RepositoryConnection): Promise<void> {
    let token: string | null;
    let layers: string[] = [];
    try {
      token = this.repos().tokenOf(r);
      if (r.blueprintId) {
        const b = await this.opts.blueprint(r.accountId, r.blueprintId);
        if (!b || b.status !== 'build_complete') {
          await this.store.settle(i.id, 'inspection_failed', {
            failureReason: `blueprint ${r.blueprintId} is ${b ? b.status : 'gone'}; inspect with another blueprint_id (refresh)`,
          });
          return;
        }
        layers = b.layers;
        // Built on another node, maybe: its layers come from the blob store.
        await this.opts.ensureLocal(layers).catch((err: Error) => {
          throw new DomainError('invalid_request', `blueprint ${r.blueprintId}: ${err.message}`);
        });
      }
    } catch (err) {
      if (err instanceof DomainError) return void (await this.store.settle(i.id, 'inspection_failed', { failureReason: err.message }));
      throw err;
    }
    const timeout = AbortSignal.timeout(this.opts.timeoutMs);
    const sandboxId = newId('rin');
    const sandbox: Sandbox = await this.opts.runtime.create({ id: sandboxId, hostname: 'inspect', layers, limits: this.opts.limits, user: DEFAULT_USER });
    const services = this.opts.boxServices();
    try {
      await services.link(sandboxId);
      const what = `cloning ${r.owner}/${r.name}`;
      const { run, grant } = await cloneInBox(
        sandbox,
        this.opts.relay,
        this.opts.servicesPort,
        { boxId: sandboxId, owner: r.owner, name: r.name, token, ref: null, dest: CHECKOUT, shallow: true },
        timeout,
      );
      if (timeout.aborted) return await this.timedOut(i);
      if (run.exitCode !== 0) {
        const f = cloneFailure(run, grant, what);
        await this.store.settle(i.id, f.status, { failureReason: f.reason });
        return;
      }
      const survey = await runInBox(sandbox, { argv: ['python3', '-c', SURVEY_SCRIPT, CHECKOUT] }, SURVEY_MAX_BYTES, timeout);
      if (timeout.aborted) return await this.timedOut(i);
      if (survey.overflow)
        return void (await this.store.settle(i.id, 'inspection_failed', {
          failureReason: `the survey of the repository is larger than ${SURVEY_MAX_BYTES} bytes`,
        }));
      if (survey.exitCode !== 0) {
        const why = survey.exitCode === 127 ? 'the box image has no python3' : survey.stderrTail.split('\n').pop() || `exit status ${survey.exitCode}`;
        return void (await this.store.settle(i.id, 'inspection_failed', { failureReason: `surveying the repository failed: ${why}` }));
      }
      let manifest;
      let commit = '';
      try {
        const s = parseSurvey(survey.stdout);
        commit = s.commit;
        const base = r.blueprintId ? (await this.opts.blueprint(r.accountId, r.blueprintId))?.name : undefined;
        manifest = deriveManifest(s, { repoName: r.name, baseImageName: base });
      } catch (err) {
        return void (await this.store.settle(i.id, 'inspection_failed', {
          failureReason: `the survey of the repository could not be read: ${(err as Error).message}`,
        }));
      }
      const applied = await this.store.settle(i.id, 'inspection_success', { commitSha: commit, manifest });
      if (applied) this.opts.log.info({ repository: r.id, inspection: i.id, commit, workspaces: manifest.workspaces.length }, 'repository inspected');
    } finally {
      await services.unlink(sandboxId).catch(() => undefined);
      await sandbox.destroy().catch((err) => this.opts.log.warn({ err, sandbox: sandboxId }, 'inspection sandbox destroy failed'));
    }
  }

  private async timedOut(i: Inspection): Promise<void> {
    await this.store.settle(i.id, 'inspection_failed', {
      failureReason: `the inspection took longer than ${Math.round(this.opts.timeoutMs / 1000)} s (DEVBOXD_REPOSITORY_INSPECTION_TIMEOUT)`,
    });
  }
}
