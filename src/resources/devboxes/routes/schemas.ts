import { Type, type Static } from 'typebox';
import type { DevboxService } from '../devbox-service.js';
import type { Devbox } from '../types.js';
import { DEVBOX_STATUSES } from '../types.js';
import { ERRORS } from '../../../platform/errors.js';
import { ArgString, Body, EnvironmentMap, Int, LIMITS, Metadata, Opt, OrNull, StringEnum, StringMap, Text } from '../../../platform/http/schemas/common.js';
import { DevboxIdParams, LaunchParametersSchema, MOUNTS_SERVED, MountsSchema } from '../../../platform/http/schemas/shared.js';

export { DevboxIdParams, LaunchParametersSchema };

export const StatusSchema = StringEnum([...DEVBOX_STATUSES]);

/** The tunnel settings of `tunnel` at create and of enable_tunnel; omitted fields take the API's defaults. */
export const TunnelParamsSchema = Body({
  auth_mode: Opt(StringEnum(['open', 'authenticated'])),
  http_keep_alive: Opt(Type.Boolean()),
  wake_on_http: Opt(Type.Boolean()),
});

export const CreateBodySchema = Body({
  name: Opt(Text(LIMITS.name)),
  entrypoint: Opt(ArgString({ maxLength: 100_000 })),
  environment_variables: Opt(EnvironmentMap),
  metadata: Opt(Metadata),
  secrets: Opt(
    Type.Unsafe<Record<string, string>>({
      type: 'object',
      propertyNames: { pattern: '^[A-Za-z_][A-Za-z0-9_]*$', maxLength: 256 },
      additionalProperties: { type: 'string', minLength: 1, maxLength: 256 },
      maxProperties: 256,
    }),
  ),
  file_mounts: Opt(
    Type.Unsafe<Record<string, string>>({
      type: 'object',
      propertyNames: { minLength: 1, maxLength: 4096, pattern: '^[^\\u0000]*$' },
      additionalProperties: { type: 'string' },
      maxProperties: 100,
    }),
  ),
  launch_parameters: Opt(LaunchParametersSchema),
  blueprint_id: Opt(Type.String({ maxLength: 200 })),
  blueprint_name: Opt(Type.String({ maxLength: 256 })),
  snapshot_id: Opt(Type.String({ maxLength: 200 })),
  code_mounts: Opt(
    Type.Array(
      Type.Unsafe<Record<string, unknown>>({ type: 'object', description: 'legacy code mounts: {repo_owner, repo_name, token?, git_ref?, install_command?}' }),
      { maxItems: 20 },
    ),
  ),
  gateways: Opt(
    Type.Unsafe<Record<string, { gateway: string; secret: string }>>({
      type: 'object',
      description: 'environment-variable prefix → {gateway: config id or name, secret: secret id or name}',
      additionalProperties: Body({ gateway: Type.String({ minLength: 1, maxLength: 256 }), secret: Type.String({ minLength: 1, maxLength: 256 }) }),
      maxProperties: 64,
    }),
  ),
  mcp: Opt(
    Type.Unsafe<Record<string, { mcp_config: string; secret: string }>>({
      type: 'object',
      propertyNames: { pattern: '^[A-Za-z_][A-Za-z0-9_]*$', maxLength: 256 },
      additionalProperties: Body({ mcp_config: Type.String({ minLength: 1, maxLength: 256 }), secret: Type.String({ minLength: 1, maxLength: 256 }) }),
      maxProperties: 32,
    }),
  ),
  mounts: Opt(MountsSchema),
  tunnel: Opt(TunnelParamsSchema),
});

/** The create body as validated (the type follows the schema). */
export type CreateBody = Static<typeof CreateBodySchema>;

const isEmpty = (v: unknown) =>
  v === undefined || v === null || v === false || (Array.isArray(v) && v.length === 0) || (typeof v === 'object' && Object.keys(v as object).length === 0);

/** What each not-yet-available create parameter needs; a non-empty value is a 400 naming it. */
const UNSUPPORTED: Array<[string, (b: CreateBody) => unknown, string]> = [
  ['mounts', (b) => b.mounts?.filter((m) => !MOUNTS_SERVED.has(m.type)), 'these mounts'],
];

/** Throws a 400 naming the first parameter this server cannot act on yet (never accepted and dropped). */
export function refuseUnsupported(b: CreateBody): void {
  for (const [field, get, what] of UNSUPPORTED) {
    if (!isEmpty(get(b))) throw ERRORS.invalid(`${field} is not supported on this server yet (${what})`);
  }
}

const FAILURE_REASONS = ['out_of_memory', 'out_of_disk', 'execution_failed', 'health_check_failed'];
const SHUTDOWN_REASONS = ['api_shutdown', 'keep_alive_timeout', 'entrypoint_exit', 'idle', 'ttl_expired'];

/** TunnelView: how a box's ports are reached from outside (the tunnels module fills it in). */
export const TunnelViewSchema = Type.Object(
  {
    auth_mode: StringEnum(['open', 'authenticated']),
    create_time_ms: Int,
    http_keep_alive: Type.Boolean(),
    tunnel_key: Type.String(),
    wake_on_http: Type.Boolean(),
    auth_token: Type.Optional(OrNull(Type.String())),
  },
  { title: 'TunnelView', description: "how a devbox's ports are reached from outside" },
);

/** DevboxView as `toView` writes it, with what view enrichers add (`tunnel`, `gateway_specs`, `mcp_specs`). */
export const DevboxViewSchema = Type.Object(
  {
    id: Type.String(),
    name: OrNull(Type.String()),
    status: StatusSchema,
    create_time_ms: Int,
    end_time_ms: OrNull(Int),
    metadata: StringMap,
    launch_parameters: Type.Unsafe<Record<string, unknown>>({
      type: 'object',
      additionalProperties: true,
      description: 'the launch parameters as they were sent',
    }),
    capabilities: Type.Array(Type.String()),
    state_transitions: Type.Array(Type.Object({ status: StatusSchema, transition_time_ms: Int, failure_reason: Type.Optional(Type.String()) })),
    initiator_type: Type.String(),
    blueprint_id: OrNull(Type.String()),
    snapshot_id: OrNull(Type.String()),
    failure_reason: OrNull(StringEnum(FAILURE_REASONS)),
    shutdown_reason: OrNull(StringEnum(SHUTDOWN_REASONS)),
    tunnel: OrNull(TunnelViewSchema),
    gateway_specs: OrNull(Type.Record(Type.String(), Type.Object({ gateway_config_id: Type.String(), secret_id: Type.String() }))),
    mcp_specs: OrNull(Type.Record(Type.String(), Type.Object({ mcp_config_id: Type.String(), secret_id: Type.String() }))),
  },
  { title: 'DevboxView', description: 'a devbox: its status, launch parameters and what it was given' },
);

/** DevboxResourceUsageView. */
export const UsageViewSchema = Type.Object(
  {
    id: Type.String(),
    status: StatusSchema,
    start_time_ms: Int,
    end_time_ms: OrNull(Int),
    total_elapsed_seconds: Type.Number(),
    total_active_seconds: Type.Number(),
    vcpu_seconds: Type.Number(),
    memory_gb_seconds: Type.Number(),
    disk_gb_seconds: Type.Number(),
    memory_bytes: OrNull(Int),
    cpu_micros: OrNull(Int),
  },
  { title: 'DevboxResourceUsageView', description: "a devbox's resource usage over its life" },
);

/**
 * The wire shape (DevboxView) of the record alone; `tunnel`, `gateway_specs` and `mcp_specs` are null here
 * and come from the view enrichers other modules contribute (`DevboxService.enrichments`), merged by `view`.
 */
export function toView(d: Devbox) {
  return {
    id: d.id,
    name: d.name,
    status: d.status,
    create_time_ms: d.createTimeMs,
    end_time_ms: d.endTimeMs,
    metadata: d.metadata,
    launch_parameters: d.launchParameters,
    capabilities: [] as string[],
    state_transitions: d.stateTransitions.map((t) => ({
      status: t.status,
      transition_time_ms: t.transitionTimeMs,
      ...(t.failureReason ? { failure_reason: t.failureReason } : {}),
    })),
    initiator_type: 'api',
    blueprint_id: d.blueprintId,
    snapshot_id: d.snapshotId,
    failure_reason: d.failureReason,
    shutdown_reason: d.shutdownReason,
    tunnel: null,
    gateway_specs: null,
    mcp_specs: null,
  };
}

/** The full view: the record's fields plus every enricher's (a feature that owns a field fills it in). */
export async function view(devboxes: Pick<DevboxService, 'enrichments'>, d: Devbox) {
  const extra = await devboxes.enrichments(d);
  return { ...toView(d), ...extra } as ReturnType<typeof toView>;
}
