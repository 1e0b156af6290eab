import { DomainError, ERRORS } from '../../platform/errors.js';
import type { Egress } from '../network-policies/index.js';
import { newId } from '../../lib/ids.js';
import type { Gate } from '../../lib/gate.js';
import type { Logger } from '../../lib/logger.js';
import type { ImageConfig as OciImageConfig, RuntimeDriver } from '../../runtime/driver.js';
import { resolveLimits, type HostCapacity } from '../devboxes/index.js';
import type { BuildContextSource, ContextArchive } from './build-context.js';
import { sha256, type BaseImage, type BuildEngine } from './build-engine.js';
import { BuildLogWriter } from './build-log.js';
import { codeSteps, type CodeClones } from './code-mounts.js';
import type { Sealer } from '../../platform/sealing/sealer.js';
import type { CodeStep } from './build-steps.js';
import { DockerfileError } from './dockerfile.js';
import { DEFAULT_FROM, dockerfileToBuild, isDefaultImage } from './preview.js';
import type { SqlBlueprintStore } from './sql-blueprint-store.js';
import { StepFailed, type StepNetwork } from './step-sandbox.js';
import { BUILDING, EMPTY_IMAGE, type Blueprint, type BuildFailure, type ImageConfig } from './types.js';

/** Cached step layers no blueprint names that are kept at least (the most recently used). */
export const CACHE_KEEP = 200;

/** What the default image says of itself (Docker images carry PATH in their config). */
const DEFAULT_IMAGE: ImageConfig = { ...EMPTY_IMAGE, env: { PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' } };

export interface BuildRunnerOptions {
  node: string;
  host: HostCapacity;
  timeoutMs: number;
  /** Secret name → value, for `secrets` (given to the build's RUN steps only). */
  reveal(accountId: string, secret: string): Promise<string>;
  /** What the build's boxes reach: `network_policy_id`'s policy, or a box's default without one. */
  network?: BuildNetwork;
  /** Clones code mounts (the repositories module); opens their sealed tokens. */
  code?: () => CodeClones | undefined;
  sealer?: Pick<Sealer, 'open'>;
  /** The blob store's copies of layers: a built blueprint's are put there, a FROM blueprint's fetched. */
  layers?: Pick<LayerCopies, 'publish' | 'ensureLocal'>;
}

/** The layers module's part in blueprints: layers put in the blob store, fetched from it, deleted there. */
export interface LayerCopies {
  publish(layers: readonly string[]): Promise<unknown>;
  ensureLocal(layers: readonly string[]): Promise<void>;
  drop(layers: readonly string[]): Promise<void>;
}

/** The network policies' part in builds (src/resources/network-policies). */
export interface BuildNetwork {
  /** The policy's egress; undefined when the account has no such policy. */
  egressOf(accountId: string, policyId: string): Promise<Egress | undefined>;
  attach(sandboxId: string, egress: Egress | null): Promise<void>;
  detach(sandboxId: string): void;
}

/**
 * Runs builds: the handler of the build job. A build waits for a slot of the gate (bounded concurrency) as
 * `queued`, is `provisioning` while its inputs are fetched, `building` while the engine runs, and ends
 * `build_complete` or `failed` with a reason and a last log line saying why. Failures of the build itself
 * settle the blueprint; only the server's own failures throw (the job then retries).
 */
export class BuildRunner {
  private readonly running = new Map<string, Promise<void>>();
  private started = false;
  private collecting = false;

  constructor(
    private readonly store: SqlBlueprintStore,
    private readonly engine: BuildEngine,
    private readonly contexts: BuildContextSource,
    private readonly runtime: RuntimeDriver,
    private readonly gate: Gate,
    private readonly log: Logger,
    private readonly opts: BuildRunnerOptions,
  ) {}

  /** Builds start once the server has started: a build a restart cut runs again then (its job retries). */
  markStarted(): void {
    this.started = true;
  }

  /** The build job: builds the blueprint, or waits for the build this process runs. */
  async run(blueprintId: string): Promise<void> {
    if (!this.started) throw new Error('the build resumes once the server has started');
    const now = this.running.get(blueprintId);
    if (now) return now;
    const b = await this.store.getById(blueprintId);
    if (!b || !BUILDING.includes(b.status)) return;
    const p = this.build(b).finally(() => this.running.delete(blueprintId));
    this.running.set(blueprintId, p);
    return p;
  }

  /** The job failed for good (the server kept failing): the blueprint fails rather than stay building. */
  async exhausted(blueprintId: string, error: string): Promise<void> {
    await this.store.transition(blueprintId, BUILDING, 'failed', {
      failureReason: 'build_failed',
      failureMessage: `the build could not run: ${error}`,
      buildFinishTimeMs: Date.now(),
    });
  }

  private async build(b: Blueprint): Promise<void> {
    const out = new BuildLogWriter(this.store, b.id, await this.store.lastLogSeq(b.id), this.log);
    if (b.status !== 'queued') out.builder('info', 'the server restarted during this build: it starts again (finished steps come from the cache)');
    const release = await this.gate.enter();
    if (!release) throw new Error('the build queue is full');
    const timeout = new AbortController();
    const timer = setTimeout(() => timeout.abort(), this.opts.timeoutMs);
    try {
      await this.store.transition(b.id, BUILDING, 'provisioning');
      const p = b.parameters;
      let context: ContextArchive | null = null;
      const secrets: Record<string, string> = {};
      let egress: Egress | null = null;
      let code: CodeStep[] = [];
      try {
        if (p.code_mounts?.length) {
          const clones = this.opts.code?.();
          if (!clones || !this.opts.sealer) throw ERRORS.invalid('code_mounts: this server has no repositories module');
          code = codeSteps(b.accountId, b.id, p.code_mounts, clones, this.opts.sealer);
        }
        if (p.network_policy_id) {
          egress = (await this.opts.network?.egressOf(b.accountId, p.network_policy_id)) ?? null;
          if (!egress) throw ERRORS.invalid(`network_policy_id: no network policy ${p.network_policy_id}`);
        }
        if (p.build_context) context = await this.contexts.archive(b.accountId, p.build_context.object_id);
        for (const [env, name] of Object.entries(p.secrets ?? {})) secrets[env] = await this.opts.reveal(b.accountId, name);
      } catch (err) {
        return await this.fail(
          b,
          out,
          'build_failed',
          err instanceof DomainError ? err.message : `the build's inputs could not be read: ${(err as Error).message}`,
        );
      }
      await this.store.transition(b.id, BUILDING, 'building');
      out.builder('info', `building ${b.name} (${b.id})`);
      const result = await this.engine.build(
        {
          runId: `${b.id}-${newId('r').slice(-6)}`,
          dockerfile: dockerfileToBuild(p, b.baseBlueprintId),
          fileMounts: p.file_mounts ?? {},
          setupCommands: p.system_setup_commands ?? [],
          codeMounts: code,
          inputs: { buildArgs: p.build_args ?? {}, secrets, secretDigest: sha256(JSON.stringify(Object.entries(secrets).sort())) },
          limits: resolveLimits((p.launch_parameters ?? {}) as Parameters<typeof resolveLimits>[0], this.opts.host),
          context,
          resolveFrom: (ref) => this.resolveFrom(b.accountId, ref, out, timeout.signal),
          network: this.stepNetwork(egress),
        },
        out,
        timeout.signal,
      );
      out.builder('info', `build complete: ${result.built} step(s) built, ${result.cached} from the cache`);
      // Published before the blueprint shows built: a box of it booting on another node waits for the upload.
      await this.opts.layers?.publish(result.layers).catch((err) => this.log.error({ err, blueprint: b.id }, 'putting the layers in the blob store failed'));
      await this.store.transition(b.id, BUILDING, 'build_complete', {
        layers: result.layers,
        image: result.image,
        baseBlueprintId: result.baseBlueprintId,
        buildFinishTimeMs: Date.now(),
      });
      this.log.info({ blueprint: b.id, built: result.built, cached: result.cached }, 'blueprint built');
    } catch (err) {
      if (timeout.signal.aborted)
        return await this.fail(
          b,
          out,
          'build_failed',
          `the build took longer than ${Math.round(this.opts.timeoutMs / 1000)} s (DEVBOXD_BLUEPRINT_BUILD_TIMEOUT)`,
        );
      if (err instanceof StepFailed) return await this.fail(b, out, err.reason, err.message);
      if (err instanceof DockerfileError || err instanceof DomainError) return await this.fail(b, out, 'build_failed', `Dockerfile: ${err.message}`);
      this.log.error({ err, blueprint: b.id }, 'build failed');
      return await this.fail(b, out, 'build_failed', `the build failed: ${(err as Error).message}`);
    } finally {
      clearTimeout(timer);
      release();
      await out.flush();
      void this.collectCache();
    }
  }

  /**
   * Bounds the step cache: layers no blueprint names (steps of failed or superseded builds) are kept for
   * reuse, the CACHE_KEEP most recently used of them; older ones go, once unused for longer than a build may
   * last (a running build may stand on a layer it took from the cache, and took it within that time).
   */
  private async collectCache(): Promise<void> {
    if (this.collecting) return;
    this.collecting = true;
    try {
      const named = await this.store.layersInUse();
      const loose = (await this.store.cacheEntries(this.opts.node)).filter((e) => !named.has(e.layer));
      const idleBefore = Date.now() - this.opts.timeoutMs - 60_000;
      const gone = loose
        .slice(CACHE_KEEP)
        .filter((e) => e.usedMs < idleBefore)
        .map((e) => e.layer);
      if (!gone.length) return;
      await this.store.uncacheLayers(this.opts.node, gone);
      for (const l of gone) await this.runtime.deleteLayer(l).catch((err) => this.log.warn({ err, layer: l }, 'cached layer delete failed'));
      this.log.info({ layers: gone.length }, 'step cache collected');
    } catch (err) {
      this.log.error({ err }, 'step cache collection failed');
    } finally {
      this.collecting = false;
    }
  }

  private stepNetwork(egress: Egress | null): StepNetwork | undefined {
    const net = this.opts.network;
    return net && { attach: (id) => net.attach(id, egress), detach: (id) => net.detach(id) };
  }

  private async fail(b: Blueprint, out: BuildLogWriter, reason: BuildFailure, message: string): Promise<void> {
    out.builder('error', `build failed: ${message}`);
    await out.flush();
    await this.store.transition(b.id, BUILDING, 'failed', { failureReason: reason, failureMessage: message, buildFinishTimeMs: Date.now() });
    this.log.info({ blueprint: b.id, reason: message }, 'blueprint build failed');
  }

  /** FROM: the default image (Runloop's base names), a blueprint (id, or name of a built one), else a registry image. */
  private async resolveFrom(accountId: string, ref: string, out: BuildLogWriter, signal: AbortSignal): Promise<BaseImage> {
    if (isDefaultImage(ref)) return { layers: [], image: structuredClone(DEFAULT_IMAGE), blueprintId: null };
    const bp = ref.startsWith('bpt_') ? await this.store.get(accountId, ref) : await this.store.latestBuilt(accountId, ref);
    if (bp) {
      if (bp.status !== 'build_complete') throw new StepFailed(`FROM ${ref}: blueprint ${bp.id} is ${bp.status}, not build_complete`);
      // Built on another node, maybe: its layers come from the blob store.
      await this.opts.layers?.ensureLocal(bp.layers).catch((err: Error) => {
        throw new StepFailed(`FROM ${ref}: ${err.message}`);
      });
      return { layers: bp.layers, image: bp.image, blueprintId: bp.id };
    }
    try {
      const pulled = await this.runtime.pullImage(ref, { signal, onProgress: (line) => out.info(line) });
      return { layers: pulled.layers, image: imageOf(pulled.config), blueprintId: null };
    } catch (err) {
      if (signal.aborted) throw err;
      throw new StepFailed(
        `FROM ${ref}: ${(err as Error).message} (images come from registries; ${DEFAULT_FROM} is the default image, a blueprint is named by its name or id)`,
      );
    }
  }
}

/** An OCI image config as the build's image state. */
function imageOf(c: OciImageConfig): ImageConfig {
  const env: Record<string, string> = {};
  for (const e of c.env ?? []) {
    const eq = e.indexOf('=');
    if (eq > 0) env[e.slice(0, eq)] = e.slice(eq + 1);
  }
  return {
    ...EMPTY_IMAGE,
    env,
    workdir: c.workingDir || null,
    user: c.user ? { name: c.user, uid: -1 } : null,
    // A registry image's ENTRYPOINT/CMD is most often a shell or a one-shot command, which would end the box
    // at once (an entrypoint's exit ends a devbox): only the blueprint's own Dockerfile sets the entrypoint.
    entrypoint: null,
    cmd: null,
    labels: c.labels ?? {},
    exposedPorts: c.exposedPorts ?? [],
  };
}
