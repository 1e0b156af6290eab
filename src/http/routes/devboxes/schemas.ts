import { Type, type TSchema } from 'typebox';
import type { Devbox } from '../../../domain/devboxes/types.js';
import { DEVBOX_STATUSES } from '../../../domain/devboxes/types.js';
import { StringEnum, StringMap } from '../../schemas/common.js';

export const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);
const Opt = <T extends TSchema>(t: T) => Type.Optional(Nullable(t));

export const StatusSchema = StringEnum([...DEVBOX_STATUSES]);

const AfterIdle = Type.Object({
  idle_time_seconds: Type.Integer({ minimum: 1 }),
  on_idle: Type.Optional(StringEnum(['shutdown', 'suspend'])),
});

/** Launch parameters: the fields devboxd acts on are typed; the whole object is echoed as sent. */
export const LaunchParametersSchema = Type.Object(
  {
    launch_commands: Opt(Type.Array(Type.String({ maxLength: 100_000 }), { maxItems: 100 })),
    resource_size_request: Opt(StringEnum(['X_SMALL', 'SMALL', 'MEDIUM', 'LARGE', 'X_LARGE', 'XX_LARGE', 'CUSTOM_SIZE'])),
    custom_cpu_cores: Opt(Type.Number({ exclusiveMinimum: 0, maximum: 64 })),
    custom_gb_memory: Opt(Type.Number({ exclusiveMinimum: 0, maximum: 256 })),
    custom_disk_size: Opt(Type.Number({ exclusiveMinimum: 0, maximum: 4096 })),
    keep_alive_time_seconds: Opt(Type.Integer({ minimum: 1 })),
    after_idle: Opt(AfterIdle),
    architecture: Opt(StringEnum(['x86_64', 'arm64'])),
    available_ports: Opt(Type.Array(Type.Integer({ minimum: 1, maximum: 65535 }))),
    user_parameters: Opt(Type.Object({ username: Type.String({ maxLength: 32 }), uid: Type.Integer({ minimum: 0 }) })),
    lifecycle: Opt(
      Type.Object(
        {
          after_idle: Opt(AfterIdle),
          lifecycle_hooks: Opt(
            Type.Object({
              suspend_commands: Opt(Type.Array(Type.String())),
              suspend_deadline_ms: Opt(Type.Integer({ minimum: 0, maximum: 600_000 })),
            }),
          ),
        },
        { additionalProperties: true },
      ),
    ),
  },
  { additionalProperties: true },
);

export const CreateBodySchema = Type.Object(
  {
    name: Opt(Type.String({ maxLength: 256 })),
    entrypoint: Opt(Type.String({ maxLength: 100_000 })),
    environment_variables: Opt(StringMap),
    metadata: Opt(StringMap),
    secrets: Opt(StringMap),
    file_mounts: Opt(StringMap),
    launch_parameters: Opt(LaunchParametersSchema),
    blueprint_id: Opt(Type.String()),
    blueprint_name: Opt(Type.String()),
    snapshot_id: Opt(Type.String()),
  },
  { additionalProperties: true },
);

export interface CreateBody {
  name?: string | null;
  entrypoint?: string | null;
  environment_variables?: Record<string, string> | null;
  metadata?: Record<string, string> | null;
  secrets?: Record<string, string> | null;
  file_mounts?: Record<string, string> | null;
  launch_parameters?: Record<string, unknown> | null;
  blueprint_id?: string | null;
  blueprint_name?: string | null;
  snapshot_id?: string | null;
}

export const DevboxIdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 200 }) });

/** The wire shape (DevboxView). */
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
