import { ERRORS } from '../../platform/errors.js';
import type { SandboxUser } from '../../runtime/driver.js';
import { resolveLimits, type HostCapacity } from './resources.js';
import type { LaunchParameters, LaunchSettings, SandboxSettings } from './types.js';

/** A create request in domain terms; the route maps wire names to these. */
export interface CreateDevboxInput {
  name?: string | null;
  metadata?: Record<string, string> | null;
  environmentVariables?: Record<string, string> | null;
  /** Environment variable name → secret name. */
  secrets?: Record<string, string> | null;
  entrypoint?: string | null;
  launchParameters?: LaunchParameters | null;
  snapshotId?: string | null;
  blueprintId?: string | null;
  blueprintName?: string | null;
  /** Path in the box (absolute, or relative to home) → file contents, written before launch commands. */
  fileMounts?: Record<string, string> | null;
  /** Objects placed in the box before launch commands (`object_mount` in `mounts`): a file, or an archive unpacked. */
  objectMounts?: ObjectMount[] | null;
  /** Repositories cloned into the box before launch commands (`code_mount` in `mounts`, legacy `code_mounts`). */
  codeMounts?: CodeMount[] | null;
  /** Agents installed into the box before launch commands (`agent_mount` in `mounts`). */
  agentMounts?: AgentMount[] | null;
  /** `broker_mount`s as sent, with their index in `mounts` (the axons module checks and records them). */
  brokerMounts?: { index: number; mount: Record<string, unknown> }[] | null;
  /** Environment variable name → the MCP config (id or name) and secret (id or name) its hub token reaches. */
  mcp?: Record<string, { mcpConfig: string; secret: string }> | null;
  /** Environment-variable prefix → the gateway config and secret (id or name each) of an agent gateway binding. */
  gateways?: Record<string, { gateway: string; secret: string }> | null;
  /** A tunnel into the box's ports, opened with the box (`tunnel` at create). */
  tunnel?: { authMode?: 'open' | 'authenticated' | null; httpKeepAlive?: boolean | null; wakeOnHttp?: boolean | null } | null;
}

/** An `object_mount`: the object `objectId` at `objectPath` (absolute) in the box. */
export interface ObjectMount {
  objectId: string;
  objectPath: string;
}

/** A `code_mount`: `<git base>/<repoOwner>/<repoName>` cloned into the user's home, then its install command run. */
export interface CodeMount {
  repoOwner: string;
  repoName: string;
  /** Read token for a private repository (else the connection's, if the account connected it). */
  token: string | null;
  /** Branch or tag; null: the default branch. */
  gitRef: string | null;
  /** Run in the clone; null: the install commands of the repository's latest manifest, if any. */
  installCommand: string | null;
}

/** An `agent_mount`: the agent by id or name (the agents module resolves it), where it goes, a token for private git. */
export interface AgentMount {
  /** Its position in `mounts` (what messages name). */
  index: number;
  agentId: string | null;
  agentName: string | null;
  agentPath: string | null;
  authToken: string | null;
}

export const DEFAULT_USER: SandboxUser = { name: 'user', uid: 1000 };
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const USER_NAME = /^[a-z_][a-z0-9_-]{0,31}$/;
const HOST_LABEL = /^[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?$/;

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : {});
const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);

export function checkEnvironment(env: Record<string, string>, field: string): void {
  for (const k of Object.keys(env)) {
    if (!ENV_NAME.test(k)) throw ERRORS.invalid(`${field}: "${k}" is not a valid environment variable name`);
  }
}

function resolveUser(p: Obj): SandboxUser {
  const up = obj(p.user_parameters);
  if (up.username === undefined && up.uid === undefined) return DEFAULT_USER;
  const name = typeof up.username === 'string' ? up.username : DEFAULT_USER.name;
  const uid = num(up.uid) ?? (name === 'root' ? 0 : DEFAULT_USER.uid);
  if (!USER_NAME.test(name)) throw ERRORS.invalid(`launch_parameters.user_parameters.username "${name}" is not a valid user name`);
  if (!Number.isInteger(uid) || uid < 0 || uid > 65534) {
    throw ERRORS.invalid('launch_parameters.user_parameters.uid must be an integer between 0 and 65534');
  }
  if ((name === 'root') !== (uid === 0)) throw ERRORS.invalid('launch_parameters.user_parameters: uid 0 is the user root, and root is uid 0');
  return { name, uid };
}

function resolveLaunch(p: Obj): LaunchSettings {
  const cmds = p.launch_commands ?? [];
  if (!Array.isArray(cmds) || cmds.some((c) => typeof c !== 'string')) {
    throw ERRORS.invalid('launch_parameters.launch_commands must be an array of strings');
  }
  const keepAlive = num(p.keep_alive_time_seconds);
  if (keepAlive !== null && keepAlive <= 0) throw ERRORS.invalid('launch_parameters.keep_alive_time_seconds must be positive');
  const lifecycle = obj(p.lifecycle);
  const idle = obj(p.after_idle ?? lifecycle.after_idle);
  let afterIdle: LaunchSettings['afterIdle'] = null;
  if (Object.keys(idle).length) {
    const idleSeconds = num(idle.idle_time_seconds);
    const onIdle = idle.on_idle ?? 'shutdown';
    if (idleSeconds === null || idleSeconds <= 0) throw ERRORS.invalid('launch_parameters.after_idle.idle_time_seconds must be positive');
    if (onIdle !== 'shutdown' && onIdle !== 'suspend') throw ERRORS.invalid('launch_parameters.after_idle.on_idle must be shutdown or suspend');
    afterIdle = { idleSeconds, onIdle };
  }
  const hooks = obj(lifecycle.lifecycle_hooks);
  const suspendCommands = hooks.suspend_commands ?? [];
  if (!Array.isArray(suspendCommands) || suspendCommands.some((c) => typeof c !== 'string')) {
    throw ERRORS.invalid('launch_parameters.lifecycle.lifecycle_hooks.suspend_commands must be an array of strings');
  }
  return {
    launchCommands: cmds as string[],
    keepAliveSeconds: keepAlive,
    afterIdle,
    suspendCommands: suspendCommands as string[],
    suspendDeadlineMs: num(hooks.suspend_deadline_ms) ?? 30_000,
  };
}

/** A box's hostname when its name is not a host label: its id, as a label. */
export const defaultHostname = (id: string): string => id.replaceAll('_', '-');

/** Validates launch parameters and resolves what the box is built from. Throws 400s naming the field. */
export function resolveSandboxSettings(id: string, name: string | null, params: LaunchParameters, host: HostCapacity): SandboxSettings {
  const p = obj(params);
  if (p.architecture !== undefined && p.architecture !== null && p.architecture !== 'x86_64') {
    throw ERRORS.invalid(`launch_parameters.architecture: only x86_64 is available on this server`);
  }
  return {
    limits: resolveLimits(p as Parameters<typeof resolveLimits>[0], host),
    user: resolveUser(p),
    hostname: name && HOST_LABEL.test(name) ? name : defaultHostname(id),
    launch: resolveLaunch(p),
  };
}
