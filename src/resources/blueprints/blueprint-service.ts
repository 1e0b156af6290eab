import { ERRORS } from '../../platform/errors.js';
import { newId } from '../../lib/ids.js';
import type { Logger } from '../../lib/logger.js';
import type { Page, PageQuery } from '../../platform/store/types.js';
import type { RuntimeDriver } from '../../runtime/driver.js';
import type { JobRunner } from '../../platform/jobs/job-runner.js';
import { resolveLimits, type HostCapacity } from '../devboxes/index.js';
import type { BuildContextSource } from './build-context.js';
import type { BuildNetwork, LayerCopies } from './build-runner.js';
import { dockerfileOf } from './preview.js';
import type { Sealer } from '../../platform/sealing/sealer.js';
import { sealServices } from './credentials.js';
import { checkCodeMounts, sealCodeMounts } from './code-mounts.js';
import { checkServices } from './services.js';
import type { SqlBlueprintStore } from './sql-blueprint-store.js';
import { EMPTY_IMAGE, type Blueprint, type BlueprintFilters, type BuildLogLine, type BuildParameters } from './types.js';

/** The durable job that builds a blueprint: a restart finds it and builds again (finished steps are cached). */
export const BUILD_JOB = 'blueprint.build';

/**
 * Blueprints: records, the public catalogue, and the build queue. The build itself is the build runner's
 * (build-runner.ts); this service records a build as queued with its job, and reads what builds left.
 */
export class BlueprintService {
  constructor(
    private readonly store: SqlBlueprintStore,
    /** Built after the devbox service, which needs this module's resolver: reached by a thunk. */
    private readonly jobs: () => JobRunner,
    private readonly contexts: BuildContextSource,
    private readonly network: BuildNetwork | undefined,
    /** Whether the account has a secret of that id or name (values are read only by the build). */
    private readonly secretExists: (accountId: string, ref: string) => Promise<boolean>,
    private readonly runtime: RuntimeDriver,
    private readonly host: HostCapacity,
    private readonly node: string,
    private readonly log: Logger,
    /** Seals the services' image passwords (credentials.ts). */
    private readonly sealer: Pick<Sealer, 'seal' | 'open'>,
    /**
     * Builds one account may have queued or running at once: the build slots are shared in arrival order,
     * so without a bound one account's flood of builds would hold every other account's behind it.
     */
    private readonly accountBuilds = Infinity,
    /** The blob store's copies of layers: a deleted blueprint's go with it. */
    private readonly layers?: Pick<LayerCopies, 'drop'>,
  ) {}

  async create(accountId: string, params: BuildParameters): Promise<Blueprint> {
    await this.check(accountId, params);
    const unfinished = await this.store.countUnfinished(accountId);
    if (unfinished >= this.accountBuilds) {
      throw ERRORS.busy(`the account has ${unfinished} builds queued or running, its limit (DEVBOXD_BLUEPRINT_ACCOUNT_BUILDS): retry once one finished`, 10);
    }
    const base = await this.baseOf(accountId, params);
    const id = newId('bpt');
    const b: Blueprint = {
      id,
      accountId,
      name: params.name,
      status: 'queued',
      failureReason: null,
      failureMessage: null,
      parameters: {
        ...params,
        ...(params.services ? { services: sealServices(params.services, id, this.sealer) } : {}),
        ...(params.code_mounts ? { code_mounts: sealCodeMounts(params.code_mounts, id, this.sealer) } : {}),
      },
      metadata: params.metadata ?? {},
      isPublic: false,
      baseBlueprintId: base?.id ?? null,
      layers: [],
      image: EMPTY_IMAGE,
      createTimeMs: Date.now(),
      buildFinishTimeMs: null,
      node: this.node,
    };
    // The job first: a crash right after the insert still finds the job that builds it.
    const job = await this.jobs().add(BUILD_JOB, b.id);
    try {
      await this.store.insert(b);
    } catch (err) {
      await this.jobs()
        .drop(job)
        .catch(() => undefined);
      throw err;
    }
    this.jobs().start(job);
    this.log.info({ blueprint: b.id, account: accountId }, 'blueprint queued');
    return b;
  }

  /** The Dockerfile the request would build (base blueprint as FROM, setup commands as RUN lines). */
  async preview(accountId: string, params: BuildParameters): Promise<string> {
    await this.check(accountId, params);
    return dockerfileOf(params, (await this.baseOf(accountId, params))?.id ?? null);
  }

  private async check(accountId: string, params: BuildParameters): Promise<void> {
    checkCodeMounts(params.code_mounts ?? []);
    checkServices(params.services ?? [], params.launch_parameters?.required_services);
    if (params.base_blueprint_id && params.base_blueprint_name) throw ERRORS.invalid('give base_blueprint_id or base_blueprint_name, not both');
    // The build's boxes get the devbox size the blueprint's launch parameters ask for: refused as for a devbox.
    resolveLimits((params.launch_parameters ?? {}) as Parameters<typeof resolveLimits>[0], this.host);
    if (params.build_context) await this.contexts.check(accountId, params.build_context.object_id);
    for (const [env, name] of Object.entries(params.secrets ?? {})) {
      if (!(await this.secretExists(accountId, name))) throw ERRORS.invalid(`secrets.${env}: no secret ${name}`);
    }
    if (params.network_policy_id && !(await this.network?.egressOf(accountId, params.network_policy_id))) {
      throw ERRORS.invalid(`network_policy_id: no network policy ${params.network_policy_id}`);
    }
  }

  private async baseOf(accountId: string, params: BuildParameters): Promise<Blueprint | null> {
    if (params.base_blueprint_id) {
      const b = await this.store.get(accountId, params.base_blueprint_id);
      if (!b) throw ERRORS.notFound('blueprint', params.base_blueprint_id);
      if (b.status !== 'build_complete') throw ERRORS.invalid(`base_blueprint_id: blueprint ${b.id} is ${b.status}, not build_complete`);
      return b;
    }
    if (params.base_blueprint_name) {
      const b = await this.store.latestBuilt(accountId, params.base_blueprint_name);
      if (!b) throw ERRORS.invalid(`base_blueprint_name: no built blueprint is named ${params.base_blueprint_name}`);
      return b;
    }
    return null;
  }

  async get(accountId: string, id: string): Promise<Blueprint> {
    const b = await this.store.get(accountId, id);
    if (!b) throw ERRORS.notFound('blueprint', id);
    return b;
  }

  list(accountId: string, filters: BlueprintFilters, page: PageQuery): Promise<Page<Blueprint>> {
    return this.store.list(accountId, filters, page);
  }

  listPublic(filters: BlueprintFilters, page: PageQuery): Promise<Page<Blueprint>> {
    return this.store.list(null, filters, page);
  }

  /** A build's log is its owner's: a public blueprint's other readers do not see it (a step may print a secret). */
  async logs(accountId: string, id: string): Promise<BuildLogLine[]> {
    const b = await this.get(accountId, id);
    if (b.accountId !== accountId) throw ERRORS.notFound('blueprint logs of', id);
    return this.store.logs(id);
  }

  /** Refused (400) while a devbox, snapshot or blueprint stands on it, or while it builds. */
  async delete(accountId: string, id: string): Promise<Blueprint> {
    const b = await this.get(accountId, id);
    if (b.accountId !== accountId) throw ERRORS.forbidden(`blueprint ${id} is public and belongs to another account`);
    if (b.status === 'queued' || b.status === 'provisioning' || b.status === 'building') {
      throw ERRORS.badState(`blueprint ${id} is ${b.status}; delete it once its build has finished`);
    }
    const dep = await this.store.dependents(id);
    const what = [
      dep.devboxes && `${dep.devboxes} devbox(es) that have not ended`,
      dep.snapshots && `${dep.snapshots} snapshot(s) (GET /v1/devboxes/disk_snapshots?source_blueprint_id=${id})`,
      dep.blueprints && `${dep.blueprints} blueprint(s) built on it`,
    ].filter(Boolean);
    if (what.length) throw ERRORS.badState(`blueprint ${id} cannot be deleted: ${what.join(', ')} depend on it`);
    const serviceLayers = await this.store.serviceLayers(id, this.node);
    await this.store.delete(id);
    // Its layers, and those of its services' images, go unless another blueprint names them (the same steps on
    // the same parent, the same image as FROM or as a service).
    const used = await this.store.layersInUse();
    const gone = [...new Set([...b.layers, ...serviceLayers])].filter((l) => !used.has(l));
    await this.store.uncacheLayers(this.node, gone);
    for (const l of gone) await this.runtime.deleteLayer(l).catch((err) => this.log.warn({ err, layer: l }, 'blueprint layer delete failed'));
    // Other nodes' fetched copies go with their layer collection, once the blob store forgot the layers.
    await this.layers?.drop(gone).catch((err) => this.log.warn({ err, blueprint: id }, 'deleting the layers from the blob store failed'));
    this.log.info({ blueprint: id, layers: gone.length }, 'blueprint deleted');
    return b;
  }

  /** Metadata keys of public blueprints, sorted. */
  async publicKeys(): Promise<string[]> {
    const keys = new Set((await this.store.publicMetadata()).flatMap((m) => Object.keys(m)));
    return [...keys].sort();
  }

  async publicValues(key: string): Promise<string[]> {
    const values = new Set((await this.store.publicMetadata()).flatMap((m) => (Object.hasOwn(m, key) ? [m[key]!] : [])));
    return [...values].sort();
  }
}
