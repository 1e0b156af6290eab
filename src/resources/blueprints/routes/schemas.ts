import { Type, type Static } from 'typebox';
import { ERRORS } from '../../../platform/errors.js';
import {
  ArgString,
  Body,
  EnvironmentMap,
  Int,
  LIMITS,
  Metadata,
  Opt,
  OrNull,
  pageSchema,
  PageQuerySchema,
  StringEnum,
  StringMap,
  Text,
} from '../../../platform/http/schemas/common.js';
import { LaunchParametersSchema } from '../../../platform/http/schemas/shared.js';
import { codeMountView, MAX_CODE_MOUNTS } from '../code-mounts.js';
import { MAX_SERVICES, SERVICE_NAME, serviceView, servicesOf } from '../services.js';
import { BLUEPRINT_STATUSES, type Blueprint, type BuildLogLine, type BuildParameters } from '../types.js';

/** Create parameters of features still to come: any value passes the schema, then is refused unless empty. */
const Later = Type.Optional(Type.Unknown());

export const BuildBody = Body({
  name: Type.String({ minLength: 1, maxLength: LIMITS.name, pattern: '^[^\\u0000]*$' }),
  dockerfile: Opt(Text(256 * 1024)),
  system_setup_commands: Opt(Type.Array(ArgString({ maxLength: 100_000 }), { maxItems: 100 })),
  base_blueprint_id: Opt(Type.String({ maxLength: 200 })),
  base_blueprint_name: Opt(Text(LIMITS.name)),
  build_args: Opt(EnvironmentMap),
  build_context: Opt(Body({ type: StringEnum(['object']), object_id: Type.String({ minLength: 1, maxLength: 200 }) })),
  file_mounts: Opt(
    Type.Unsafe<Record<string, string>>({
      type: 'object',
      propertyNames: { minLength: 1, maxLength: 4096, pattern: '^[^\\u0000]*$' },
      additionalProperties: { type: 'string' },
      maxProperties: 100,
    }),
  ),
  launch_parameters: Opt(LaunchParametersSchema),
  metadata: Opt(Metadata),
  secrets: Opt(
    Type.Unsafe<Record<string, string>>({
      type: 'object',
      propertyNames: { pattern: '^[A-Za-z_][A-Za-z0-9_]*$', maxLength: 256 },
      additionalProperties: { type: 'string', minLength: 1, maxLength: 256 },
      maxProperties: 256,
    }),
  ),
  network_policy_id: Opt(Type.String({ maxLength: 200 })),
  code_mounts: Opt(
    Type.Array(
      Body({
        repo_name: Type.String({ minLength: 1, maxLength: 100 }),
        repo_owner: Type.String({ minLength: 1, maxLength: 100 }),
        token: Opt(Type.String({ maxLength: 4096 })),
        git_ref: Opt(Type.String({ maxLength: 255 })),
        install_command: Opt(ArgString({ maxLength: 100_000 })),
      }),
      { maxItems: MAX_CODE_MOUNTS },
    ),
  ),
  services: Opt(
    Type.Array(
      Body({
        name: Type.String({ pattern: SERVICE_NAME }),
        image: Type.String({ minLength: 1, maxLength: 512 }),
        credentials: Opt(Body({ username: Type.String({ minLength: 1, maxLength: 256 }), password: Type.String({ minLength: 1, maxLength: 4096 }) })),
        env: Opt(EnvironmentMap),
        options: Opt(Type.String({ maxLength: 4096 })),
        port_mappings: Opt(Type.Array(Type.String({ maxLength: 32 }), { maxItems: 32 })),
      }),
      { maxItems: MAX_SERVICES },
    ),
  ),
  devbox_capabilities: Later,
});
export type BuildBodyWire = Static<typeof BuildBody>;

export const BlueprintListQuery = Type.Object({
  ...PageQuerySchema.properties,
  name: Type.Optional(Text(LIMITS.name)),
  status: Type.Optional(StringEnum([...BLUEPRINT_STATUSES])),
});

export const MetadataKeyParams = Type.Object({ key: Type.String({ minLength: 1, maxLength: 128 }) });

export const BlueprintViewSchema = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    status: StringEnum([...BLUEPRINT_STATUSES]),
    state: StringEnum(['created', 'deleted']),
    create_time_ms: Int,
    build_finish_time_ms: OrNull(Int),
    failure_reason: OrNull(StringEnum(['out_of_memory', 'out_of_disk', 'build_failed'])),
    base_blueprint_id: OrNull(Type.String()),
    is_public: Type.Boolean(),
    metadata: StringMap,
    parameters: Type.Unsafe<Record<string, unknown>>({ type: 'object', additionalProperties: true, description: 'the build parameters as they were sent' }),
    containerized_services: Type.Array(
      Type.Object({
        name: Type.String(),
        image: Type.String(),
        env: OrNull(StringMap),
        options: OrNull(Type.String()),
        port_mappings: OrNull(Type.Array(Type.String())),
      }),
    ),
    devbox_capabilities: Type.Array(Type.String()),
  },
  { title: 'BlueprintView', description: 'a blueprint: its build parameters and build status' },
);
export const BlueprintListView = pageSchema('blueprints', BlueprintViewSchema);
export const PreviewView = Type.Object({ dockerfile: Type.String() });
export const LogsView = Type.Object({
  blueprint_id: Type.String(),
  logs: Type.Array(Type.Object({ level: Type.String(), message: Type.String(), timestamp_ms: Int })),
});
export const KeysView = Type.Object({ keys: Type.Array(Type.String()) });
export const ValuesView = Type.Object({ key: Type.String(), values: Type.Array(Type.String()) });

const isEmpty = (v: unknown) => v === undefined || v === null || (Array.isArray(v) && v.length === 0);

/** The request in domain terms (wire names are kept: they are echoed as `parameters`); unsupported parts are a 400. */
export function toParams(b: BuildBodyWire): BuildParameters {
  const caps = b.devbox_capabilities;
  if (!isEmpty(caps)) {
    badRequest(
      Array.isArray(caps) && caps.includes('docker_in_docker')
        ? 'devbox_capabilities: docker_in_docker is not offered by this server (boxes cannot run a container engine)'
        : 'devbox_capabilities is not supported on this server',
    );
  }
  const { devbox_capabilities: _c, ...rest } = b;
  return Object.fromEntries(Object.entries(rest).filter(([, v]) => v !== null && v !== undefined)) as unknown as BuildParameters;
}

function badRequest(message: string): never {
  throw ERRORS.invalid(message);
}

export const toView = (b: Blueprint) => ({
  id: b.id,
  name: b.name,
  status: b.status,
  state: 'created' as const,
  create_time_ms: b.createTimeMs,
  build_finish_time_ms: b.buildFinishTimeMs,
  failure_reason: b.failureReason,
  base_blueprint_id: b.baseBlueprintId,
  is_public: b.isPublic,
  metadata: b.metadata,
  // Image credentials and repository tokens are for the build only: neither echo shows them.
  parameters: {
    ...b.parameters,
    ...(b.parameters.services ? { services: servicesOf(b).map(serviceView) } : {}),
    ...(b.parameters.code_mounts ? { code_mounts: b.parameters.code_mounts.map(codeMountView) } : {}),
  } as unknown as Record<string, unknown>,
  containerized_services: servicesOf(b).map(serviceView),
  devbox_capabilities: [] as string[],
});

export const toLogs = (id: string, lines: BuildLogLine[]) => ({
  blueprint_id: id,
  logs: lines.map((l) => ({ level: l.level, message: l.message, timestamp_ms: l.timestampMs })),
});
