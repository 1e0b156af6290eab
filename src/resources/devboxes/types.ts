import type { ResourceLimits, SandboxUser } from '../../runtime/driver.js';

export const DEVBOX_STATUSES = [
  'scheduled',
  'queued',
  'provisioning',
  'initializing',
  'running',
  'suspending',
  'suspended',
  'resuming',
  'failure',
  'shutdown',
] as const;
export type DevboxStatus = (typeof DEVBOX_STATUSES)[number];

/**
 * The account of a pooled box (a warm pool's: booted ahead, no tenant's yet). No key belongs to it, so no
 * tenant reads, lists or reaches such a box; a create that takes it writes its own account over this.
 */
export const POOL_ACCOUNT = '';
export const isPooled = (d: Pick<Devbox, 'accountId'>): boolean => d.accountId === POOL_ACCOUNT;

export const TERMINAL: ReadonlySet<DevboxStatus> = new Set(['failure', 'shutdown']);

export type FailureReason = 'out_of_memory' | 'out_of_disk' | 'execution_failed' | 'health_check_failed';
export type ShutdownReason = 'api_shutdown' | 'keep_alive_timeout' | 'entrypoint_exit' | 'idle' | 'ttl_expired';

export interface StateTransition {
  status: DevboxStatus;
  transitionTimeMs: number;
  /** Readable reason for failures and ends (e.g. which launch command failed and how). */
  failureReason?: string;
}

/**
 * Launch parameters as the client sent them: echoed verbatim, read by the domain through `LaunchSettings`.
 * Kept as the wire-level object because the API promises to echo what was given.
 */
export type LaunchParameters = Record<string, unknown>;

/** What the domain acts on, resolved once from the launch parameters at create time. */
export interface LaunchSettings {
  launchCommands: string[];
  keepAliveSeconds: number | null;
  afterIdle: { idleSeconds: number; onIdle: 'shutdown' | 'suspend' } | null;
  suspendCommands: string[];
  suspendDeadlineMs: number;
}

/** How the sandbox is built: stored so a restart or resume builds the same box. */
export interface SandboxSettings {
  limits: ResourceLimits;
  user: SandboxUser;
  hostname: string;
  launch: LaunchSettings;
  /** Where commands start (the image's WORKDIR); absent: the user's home. */
  cwd?: string;
}

export interface Devbox {
  id: string;
  accountId: string;
  name: string | null;
  status: DevboxStatus;
  createTimeMs: number;
  endTimeMs: number | null;
  failureReason: FailureReason | null;
  shutdownReason: ShutdownReason | null;
  metadata: Record<string, string>;
  launchParameters: LaunchParameters;
  /** environment_variables plus resolved secrets, given to every process in the box. */
  environment: Record<string, string>;
  entrypoint: string | null;
  blueprintId: string | null;
  snapshotId: string | null;
  /** Disk layers under the writable layer, newest first (from the snapshot it started on, or a suspend). */
  layers: string[];
  sandbox: SandboxSettings;
  stateTransitions: StateTransition[];
  /** Last keep_alive (or creation): the keep-alive timer counts from here. */
  keepAliveAtMs: number;
  /** The server (DEVBOXD_NODE_NAME) whose sandbox runs this box; only it reconciles and supervises it. */
  node: string;
  /**
   * The view parts (a ViewEnricher's `part`: 'tunnel', 'mcp', 'gateway') this box may have anything for,
   * recorded in the transaction that writes what they show; a part never recorded is not read for a view.
   * Null for rows from before the record existed: every enricher reads.
   */
  viewParts: string[] | null;
}
