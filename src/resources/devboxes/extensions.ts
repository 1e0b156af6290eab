import type { DomainError } from '../../platform/errors.js';
import type { Store } from '../../platform/store/types.js';
import type { ResourceLimits, Sandbox, SandboxSpec, SandboxUser } from '../../runtime/driver.js';
import type { AgentMount, CodeMount, CreateDevboxInput, ObjectMount } from './create-input.js';
import type { Devbox, LaunchParameters } from './types.js';

/**
 * The extension points of the devbox core. Modules that extend a devbox (snapshots, secrets, network
 * policies, objects, tunnels, MCP and gateway configs, ...) register with them as they are built (each needs
 * the devbox module; see extension-registry.ts), instead of each adding a setter to the devbox service or the
 * lifecycle.
 */

/** What a create request resolves to beyond its own fields; resolvers fill in the parts they own. */
export interface CreateResolution {
  /** Image layers the box boots from (a snapshot's or a blueprint's), newest first. */
  layers?: string[];
  blueprintId?: string | null;
  /**
   * What the box takes from its image unless the request says otherwise (a blueprint's): launch parameters
   * under the request's own (per field), environment variables under its own, an entrypoint when it gives
   * none, and the directory its commands start in.
   */
  defaults?: { launchParameters?: LaunchParameters; environment?: Record<string, string>; entrypoint?: string | null; cwd?: string | null };
  /**
   * Records what the feature keeps about the new box (its secret, gateway or MCP bindings) in the
   * transaction that inserts the devbox, so a box never exists without them, nor they without the box.
   */
  persist?: (tx: Store, devbox: Devbox) => Promise<void>;
  /** The view part (a ViewEnricher's `part`) the box has something for from its creation on. */
  viewPart?: string;
}

/**
 * Validates a create request and resolves what it names (snapshot layers, blueprints; that secret names exist) before
 * the record exists. Throws a domain error (404/400) to refuse the request; resolves undefined when the
 * request names nothing it owns.
 */
export type CreateResolver = (accountId: string, input: CreateDevboxInput) => Promise<CreateResolution | undefined>;

/** What a boot step sees: the box being booted and its new sandbox. */
export interface BootContext {
  devbox: Devbox;
  sandbox: Sandbox;
  /** The create request's file mounts (empty on resume). */
  fileMounts: Record<string, string>;
  /** The create request's object mounts (empty on resume: the box's disk keeps what they placed). */
  objectMounts: ObjectMount[];
  /** The create request's code mounts (empty on resume: the box's disk keeps the clones). */
  codeMounts: CodeMount[];
  /** The create request's agent mounts (empty on resume: the box's disk keeps what they installed). */
  agentMounts: AgentMount[];
  resuming: boolean;
  /**
   * The sandbox came from a warm pool (booted ahead under no account, its network up with the default rules):
   * a step redoes only what the create asked beyond that.
   */
  taken: boolean;
  /** Aborts once the box has ended (or been suspended) while booting: long steps stop their work. */
  signal: AbortSignal;
}

/**
 * One step between "sandbox created" and "running" (write file mounts, run launch commands; later attach a
 * network, mount objects). Steps run in order; a step that throws ends the box in failure/execution_failed
 * with the error's message.
 */
export interface BootStep {
  name: string;
  /** Quick platform work (the box's network rules) that does not by itself show the box as `initializing`. */
  quiet?: boolean;
  /**
   * Needs nothing of the other steps that say so, nor they of it: consecutive such steps run side by side
   * (each may be a round trip to the node agent).
   */
  alongside?: boolean;
  /** Whether the step has work for this box: a box with any work passes through `initializing`. */
  applies(ctx: BootContext): boolean;
  run(ctx: BootContext): Promise<void>;
}

/**
 * Readies what a sandbox needs before it is created on the box's layers (fetches the layers this node lacks
 * from the blob store; makes the box-services socket), and may answer what the sandbox is created with
 * beyond the box's own spec (the box-services link); a throw fails the create (or resume) with its message.
 */
export type BeforeCreate = (devbox: Devbox) => Promise<Pick<SandboxSpec, 'services'> | undefined | void>;

/** Runs once the box is running (the entrypoint); `end` ends the box when what it started exits. */
export type RunningStep = (devbox: Devbox, sandbox: Sandbox, end: () => void) => void;

/**
 * The box's processes are gone (shutdown, failure, suspend): what runs in it ends now. `ended`: the box
 * ended (shutdown, failure), so it never runs again, whatever its record says yet; false on suspend.
 */
export type StopListener = (devboxId: string, ended: boolean) => void;

/** Environment variables a box's processes get beyond its own (secrets), at boot and at every execution. */
export type EnvironmentProvider = (devbox: Devbox) => Promise<Record<string, string>>;

/**
 * Fields a devbox view carries beyond the record (`tunnel`, `gateway_specs`, `mcp_specs`), by wire name. A box
 * whose record says it never had anything for `part` (Devbox.viewParts) gets `none` without a read: most boxes
 * have no tunnel, MCP or gateway bindings, and each read is a database round trip on every GET.
 */
export interface ViewEnricher {
  /** Lower-case letters; recorded by a create resolution's `viewPart` or `DevboxStore.markView`. */
  part: string;
  none: Record<string, unknown>;
  enrich(devbox: Devbox): Promise<Record<string, unknown>>;
}

/**
 * Refuses a non-forced shutdown, or allows it with null. A refusal is a DomainError carrying its own code
 * (`snapshot_in_progress`), returned or thrown; a plain reason string answers a generic 409 `conflict`.
 */
export type ShutdownGuard = (devbox: Devbox) => Promise<DomainError | string | null>;

/**
 * Where a new box goes, asked once its request is resolved (its size and layers known) and before it is
 * recorded: resolves to create it here, throws ElsewhereError (platform/http/peers.ts) to have the request
 * forwarded to the API server of another node, or a refusal (503: no node can take it). `placing` is false for
 * a box the server creates for itself (scenario and benchmark runs, build steps) and for a create another
 * server placed here: those are created here or refused.
 */
export type Placer = (
  box: { size: Pick<ResourceLimits, 'cpuCores' | 'memoryBytes' | 'diskBytes'>; layers: readonly string[] },
  placing: boolean,
) => Promise<void>;

/** The lists the lifecycle takes at construction. */
export interface LifecycleExtensions {
  beforeCreate: BeforeCreate[];
  bootSteps: BootStep[];
  onRunning: RunningStep[];
  onStopped: StopListener[];
}

/** What makes two boxes' sandboxes the same, so that a pooled one can stand for a new one. */
export interface BoxMake {
  layers: readonly string[];
  limits: ResourceLimits;
  user: SandboxUser;
}

/**
 * A warm pool's side of a create: `take` hands out a ready box of that make (its id; it is the taker's now),
 * or null (none ready: the cold path). `returned` hears of a box taken but not used after all (the create's
 * record could not be written): the pool ends it, since what the create began with it is unknown.
 */
export interface PoolTaker {
  take(make: BoxMake): string | null;
  returned(id: string): void;
}

/** The lists the devbox service takes at construction. */
export interface DevboxExtensions {
  resolvers: CreateResolver[];
  environment: EnvironmentProvider[];
  enrichers: ViewEnricher[];
  shutdownGuards: ShutdownGuard[];
  placers: Placer[];
  /** The warm pools, when a module keeps them. */
  pool?: PoolTaker;
}
