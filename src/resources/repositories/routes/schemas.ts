import { Type } from 'typebox';
import { Body, Int, Opt, OrNull, pageSchema, PageQuerySchema, StringEnum, StringMap, Text } from '../../../platform/http/schemas/common.js';
import { MAX_BYTES_KEYWORD } from '../../../platform/http/validation.js';
import { DEFAULT_FROM } from '../../blueprints/index.js';
import { TOKEN_MAX } from '../repository-service.js';
import { INSPECTION_STATUSES, type Inspection, type RepositoryConnection, type RepositoryManifest } from '../types.js';

/** Largest user manifest, as JSON: it is stored and returned with every read of its inspection. */
export const USER_MANIFEST_MAX_BYTES = 256 * 1024;

const Token = Type.String({ minLength: 1, maxLength: TOKEN_MAX, description: 'read token of a private repository; stored encrypted, never returned' });
const BlueprintId = Type.String({ minLength: 1, maxLength: 200 });

export const CreateRepositoryBody = Body({
  name: Type.String({ minLength: 1, maxLength: 100 }),
  owner: Type.String({ minLength: 1, maxLength: 100 }),
  blueprint_id: Opt(BlueprintId),
  github_auth_token: Opt(Token),
});
export const InspectBody = Body({ github_auth_token: Opt(Token) });
export const RefreshBody = Body({ blueprint_id: Opt(BlueprintId), github_auth_token: Opt(Token) });

export const RepositoryListQuery = Type.Object(
  { ...PageQuerySchema.properties, name: Type.Optional(Text(100)), owner: Type.Optional(Text(100)) },
  { additionalProperties: false },
);

export const RepositoryViewSchema = Type.Object(
  { id: Type.String(), name: Type.String(), owner: Type.String() },
  { title: 'RepositoryConnectionView', description: 'a repository connection (its token is never returned)' },
);
export const RepositoryListView = pageSchema('repositories', RepositoryViewSchema);

/* The manifest: requests take its request shape; responses declare every field (the serializer writes only those). */
const Commands = Type.Array(Text(10_000), { maxItems: 100 });
const CommandsOrNull = Opt(Commands);
const DevCommandsIn = Body({ install: CommandsOrNull, build: CommandsOrNull, test: CommandsOrNull, lint: CommandsOrNull, scripts: CommandsOrNull });
const WorkspaceIn = Body({
  name: Opt(Text(256)),
  path: Opt(Text(4096)),
  build_tool: Type.Array(Text(100), { maxItems: 20 }),
  workspace_setup_commands: CommandsOrNull,
  workspace_refresh_commands: CommandsOrNull,
  dev_commands: Opt(DevCommandsIn),
});
const ContainerConfigIn = Body({
  base_image_name: Type.String({ minLength: 1, maxLength: 512, pattern: '^[^\\u0000]*$' }),
  setup_commands: CommandsOrNull,
  architecture: Opt(StringEnum(['x86_64'], { description: 'only x86_64 on this server' })),
});
export const UserManifestBody = Type.Object(
  {
    container_config: Type.Optional(ContainerConfigIn),
    workspaces: Type.Optional(Type.Array(WorkspaceIn, { maxItems: 100 })),
    required_env_vars: Opt(Type.Array(Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]*$', maxLength: 256 }), { maxItems: 500 })),
    env_vars: Opt(
      Type.Unsafe<Record<string, string>>({
        type: 'object',
        propertyNames: { pattern: '^[A-Za-z_][A-Za-z0-9_]*$', maxLength: 256 },
        additionalProperties: { type: 'string', maxLength: 32 * 1024, pattern: '^[^\\u0000]*$' },
        maxProperties: 500,
      }),
    ),
  },
  {
    additionalProperties: false,
    [MAX_BYTES_KEYWORD]: USER_MANIFEST_MAX_BYTES,
    description: 'fields given replace the inspected ones; languages and services come from the latest inspection',
  },
);

const Strings = Type.Array(Type.String());
const StringsOrNull = Type.Union([Strings, Type.Null()]);
const ManifestSchema = Type.Object({
  container_config: Type.Object({ base_image_name: Type.String(), setup_commands: StringsOrNull, architecture: StringEnum(['x86_64']) }),
  workspaces: Type.Array(
    Type.Object({
      name: OrNull(Type.String()),
      path: OrNull(Type.String()),
      build_tool: Strings,
      workspace_setup_commands: StringsOrNull,
      workspace_refresh_commands: StringsOrNull,
      dev_commands: Type.Union([
        Type.Object({ install: StringsOrNull, build: StringsOrNull, test: StringsOrNull, lint: StringsOrNull, scripts: StringsOrNull }),
        Type.Null(),
      ]),
    }),
  ),
  containerized_services: Type.Union([
    Type.Array(
      Type.Object({
        name: Type.String(),
        image: Type.String(),
        credentials: Type.Union([Type.Object({ username: Type.String(), password: Type.String() }), Type.Null()]),
        env: Type.Union([StringMap, Type.Null()]),
        port_mappings: StringsOrNull,
        options: OrNull(Type.String()),
      }),
    ),
    Type.Null(),
  ]),
  languages: Type.Array(Type.Object({ language: Type.String(), version: Type.Optional(Type.String()) })),
  required_env_vars: StringsOrNull,
  env_vars: Type.Union([StringMap, Type.Null()]),
});
export const ManifestViewSchema = Type.Object(ManifestSchema.properties, { title: 'RepositoryManifestView', description: 'the repository manifest' });

export const InspectionViewSchema = Type.Object(
  {
    id: Type.String(),
    commit_sha: Type.String(),
    inspected_at: Int,
    status: StringEnum([...INSPECTION_STATUSES]),
    repository_manifest: ManifestSchema,
    user_manifest: Type.Union([ManifestSchema, Type.Null()]),
    blueprint_id: Type.Null(),
    blueprint_name: Type.Null(),
    build_status: Type.Null(),
    workflow_contexts: Type.Null(),
    failure_reason: OrNull(Type.String({ description: 'why a failed inspection failed (devboxd)' })),
  },
  { title: 'RepositoryInspectionDetails', description: 'an inspection of a repository and the manifest it found' },
);
export const InspectionListView = Type.Object({ inspections: Type.Array(InspectionViewSchema) });

export const toRepositoryView = (r: RepositoryConnection) => ({ id: r.id, name: r.name, owner: r.owner });

/** Every field present, in the order and shape the schema declares. */
export function toManifestView(m: RepositoryManifest | null) {
  return {
    container_config: {
      base_image_name: m?.container_config.base_image_name ?? DEFAULT_FROM,
      setup_commands: m?.container_config.setup_commands ?? [],
      architecture: 'x86_64' as const,
    },
    workspaces: (m?.workspaces ?? []).map((w) => ({
      name: w.name ?? null,
      path: w.path ?? null,
      build_tool: w.build_tool,
      workspace_setup_commands: w.workspace_setup_commands ?? null,
      workspace_refresh_commands: w.workspace_refresh_commands ?? null,
      dev_commands: w.dev_commands
        ? {
            install: w.dev_commands.install ?? null,
            build: w.dev_commands.build ?? null,
            test: w.dev_commands.test ?? null,
            lint: w.dev_commands.lint ?? null,
            scripts: w.dev_commands.scripts ?? null,
          }
        : null,
    })),
    containerized_services:
      m?.containerized_services?.map((c) => ({
        name: c.name,
        image: c.image,
        credentials: c.credentials ?? null,
        env: c.env ?? null,
        port_mappings: c.port_mappings ?? null,
        options: c.options ?? null,
      })) ?? null,
    languages: m?.languages ?? [],
    required_env_vars: m?.required_env_vars ?? null,
    env_vars: m?.env_vars ?? null,
  };
}

export const toInspectionView = (i: Inspection) => ({
  id: i.id,
  commit_sha: i.commitSha,
  inspected_at: i.inspectedAtMs,
  status: i.status,
  repository_manifest: toManifestView(i.manifest),
  user_manifest: i.userManifest && toManifestView(i.userManifest),
  blueprint_id: null,
  blueprint_name: null,
  build_status: null,
  workflow_contexts: null,
  failure_reason: i.failureReason,
});
