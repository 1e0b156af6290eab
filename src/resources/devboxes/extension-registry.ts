import type { Devbox } from './types.js';
import type {
  BeforeCreate,
  BootStep,
  CreateResolver,
  DevboxExtensions,
  EnvironmentProvider,
  LifecycleExtensions,
  Placer,
  PoolTaker,
  RunningStep,
  ShutdownGuard,
  StopListener,
  ViewEnricher,
} from './extensions.js';
import type { Suspender } from './hooks.js';

/**
 * Where a resolver runs: `admit` before anything is resolved (a draining server refuses creates), then
 * `defaults` (a blueprint's launch defaults, which the others see), then `resolve` (everything else).
 */
export type ResolverStage = 'admit' | 'defaults' | 'resolve';

/**
 * Where a boot step runs: the box's network first (its services and commands need it), then files, mounts,
 * the blueprint's services, and last the launch commands and entrypoint, which may use all of those. (The
 * box-services link is made with the sandbox: a `beforeCreate`.)
 */
export type BootStage = 'network' | 'files' | 'mounts' | 'services' | 'processes';

const RESOLVER_STAGES: readonly ResolverStage[] = ['admit', 'defaults', 'resolve'];
const BOOT_STAGES: readonly BootStage[] = ['network', 'files', 'mounts', 'services', 'processes'];

/**
 * The devbox core's extension points, filled by the modules that extend a box as they are built (each after
 * the devbox module, which they need), and read by the lifecycle and the devbox service at every use. Within
 * a stage, contributions keep the order of module composition.
 */
export class DevboxExtensionRegistry {
  readonly lifecycle: LifecycleExtensions = { beforeCreate: [], bootSteps: [], onRunning: [], onStopped: [] };
  readonly service: DevboxExtensions = { resolvers: [], environment: [], enrichers: [], shutdownGuards: [], placers: [] };
  private readonly resolverStages: ResolverStage[] = [];
  private readonly bootStages: BootStage[] = [];
  private suspender: Suspender | undefined;

  resolver(resolve: CreateResolver, stage: ResolverStage = 'resolve'): void {
    insertByStage(this.service.resolvers, this.resolverStages, RESOLVER_STAGES, resolve, stage);
  }

  beforeCreate(step: BeforeCreate): void {
    this.lifecycle.beforeCreate.push(step);
  }

  /** The one warm-pool keeper; a second is a composition error. */
  poolTaker(taker: PoolTaker): void {
    if (this.service.pool) throw new Error('a second warm pool taker was registered');
    this.service.pool = taker;
  }

  bootStep(step: BootStep, stage: BootStage): void {
    insertByStage(this.lifecycle.bootSteps, this.bootStages, BOOT_STAGES, step, stage);
  }

  onRunning(step: RunningStep): void {
    this.lifecycle.onRunning.push(step);
  }

  onStopped(listener: StopListener): void {
    this.lifecycle.onStopped.push(listener);
  }

  environment(provide: EnvironmentProvider): void {
    this.service.environment.push(provide);
  }

  enricher(enricher: ViewEnricher): void {
    this.service.enrichers.push(enricher);
  }

  shutdownGuard(guard: ShutdownGuard): void {
    this.service.shutdownGuards.push(guard);
  }

  /** Decides where a new box goes (the node registry: this node, or another one the request is forwarded to). */
  placer(place: Placer): void {
    this.service.placers.push(place);
  }

  /** What suspends a box idle past after_idle with on_idle: suspend (one module offers it: snapshots). */
  idleSuspender(suspend: Suspender): void {
    if (this.suspender) throw new Error('a second idle suspender was registered');
    this.suspender = suspend;
  }

  /** The supervisor's suspender: refuses while no module offers one (idle boxes are then left running). */
  readonly suspendIdle: Suspender = (d: Devbox) => (this.suspender ? this.suspender(d) : Promise.reject(new Error('no module suspends idle devboxes')));
}

/** Inserts `item` after every item of its stage or an earlier one, keeping `stages` beside `items`. */
function insertByStage<T, S>(items: T[], stages: S[], order: readonly S[], item: T, stage: S): void {
  let at = stages.length;
  while (at > 0 && order.indexOf(stages[at - 1]!) > order.indexOf(stage)) at--;
  items.splice(at, 0, item);
  stages.splice(at, 0, stage);
}
