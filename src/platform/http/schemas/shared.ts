import { Type } from 'typebox';
import { MAX_BYTES_KEYWORD } from '../validation.js';
import { ArgString, Body, LIMITS, Opt, StringEnum } from './common.js';

// Wire schemas several resources speak (devboxes, blueprints, scenarios, benchmarks, and every route under
// /v1/devboxes/{id}): here, below the resources, so none of them imports another's route schemas for them.

/** The `{id}` of a route under /v1/devboxes/{id}. */
export const DevboxIdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 200 }) });

const Seconds = Type.Integer({ minimum: 1, maximum: LIMITS.maxSeconds });
const Commands = Type.Array(ArgString({ maxLength: 100_000 }), { maxItems: 100 });

const AfterIdle = Body({
  idle_time_seconds: Seconds,
  on_idle: Type.Optional(StringEnum(['shutdown', 'suspend'])),
});

/**
 * Launch parameters: every field of the SDK is known here. The whole object is echoed as sent, so it is
 * bounded as a whole too.
 */
export const LaunchParametersSchema = Type.Object(
  {
    launch_commands: Opt(Commands),
    resource_size_request: Opt(StringEnum(['X_SMALL', 'SMALL', 'MEDIUM', 'LARGE', 'X_LARGE', 'XX_LARGE', 'CUSTOM_SIZE'])),
    custom_cpu_cores: Opt(Type.Number({ exclusiveMinimum: 0, maximum: 64 })),
    custom_gb_memory: Opt(Type.Number({ exclusiveMinimum: 0, maximum: 256 })),
    custom_disk_size: Opt(Type.Integer({ minimum: 1, maximum: 4096 })),
    keep_alive_time_seconds: Opt(Seconds),
    after_idle: Opt(AfterIdle),
    architecture: Opt(StringEnum(['x86_64', 'arm64'])),
    available_ports: Opt(Type.Array(Type.Integer({ minimum: 1, maximum: 65535 }), { maxItems: 100, uniqueItems: true })),
    network_policy_id: Opt(Type.String({ maxLength: 200 })),
    provisioning_tier: Opt(StringEnum(['standard', 'flex'])),
    required_services: Opt(Type.Array(Type.String({ maxLength: 200 }), { maxItems: 100 })),
    user_parameters: Opt(Body({ username: Type.String({ minLength: 1, maxLength: 32 }), uid: Type.Integer({ minimum: 0, maximum: 65534 }) })),
    lifecycle: Opt(
      Body({
        after_idle: Opt(AfterIdle),
        lifecycle_hooks: Opt(
          Body({
            suspend_commands: Opt(Commands),
            suspend_deadline_ms: Opt(Type.Integer({ minimum: 0, maximum: 600_000 })),
          }),
        ),
        resume_triggers: Opt(Body({ axon_event: Opt(Type.Boolean()), http: Opt(Type.Boolean()) })),
      }),
    ),
  },
  { additionalProperties: false, [MAX_BYTES_KEYWORD]: LIMITS.launchParametersBytes },
);

/**
 * `mounts` at create: a list of Runloop's mount shapes, told apart by `type`. The schema checks only the
 * type; each shape's fields are checked by `mountsOf`, whose messages name the field (a union in the schema
 * would answer "must match a schema in anyOf").
 */
export const MountsSchema = Type.Array(
  Type.Unsafe<Record<string, unknown> & { type: string }>({
    type: 'object',
    required: ['type'],
    properties: { type: { type: 'string', enum: ['object_mount', 'file_mount', 'code_mount', 'agent_mount', 'broker_mount'] } },
    description:
      'object_mount {object_id, object_path}: the object at object_path (archives unpacked into it); file_mount {target, content}: a file; agent_mount {agent_id or agent_name, agent_path, auth_token}: the agent installed at boot; broker_mount {axon_id, protocol: claude_json | acp | codex_json | pi_json, agent_binary, launch_args, working_directory}: the agent launched in the box, the axon events delivered to it in its protocol, its replies published back; code_mount {repo_owner, repo_name, token?, git_ref?, install_command?}: the repository cloned into the home directory',
  }),
  { maxItems: 100 },
);

/** Mount types this server places; the others are refused by `refuseUnsupported`. */
export const MOUNTS_SERVED = new Set(['object_mount', 'file_mount', 'agent_mount', 'broker_mount', 'code_mount']);
