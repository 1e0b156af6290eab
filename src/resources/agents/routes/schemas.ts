import { Type, type TSchema } from 'typebox';
import { ArgString, Body, Int, Opt, OrNull, pageSchema, PageQuerySchema, StringEnum, Text } from '../../../platform/http/schemas/common.js';
import { SOURCE_TYPES, type Agent } from '../types.js';

/** Commands run in the box after the install (`agent_setup`), as the box user. */
const Setup = Type.Array(ArgString({ minLength: 1, maxLength: 100_000 }), { maxItems: 100 });
const Url = Text(2048);
const Version = ArgString({ minLength: 1, maxLength: 256 });

export const SourceSchema = Body({
  type: StringEnum([...SOURCE_TYPES]),
  npm: Opt(Body({ package_name: ArgString({ minLength: 1, maxLength: 214 }), registry_url: Opt(Url), npm_version: Opt(Version), agent_setup: Opt(Setup) })),
  pip: Opt(Body({ package_name: ArgString({ minLength: 1, maxLength: 200 }), registry_url: Opt(Url), pip_version: Opt(Version), agent_setup: Opt(Setup) })),
  git: Opt(Body({ repository: ArgString({ minLength: 1, maxLength: 2048 }), ref: Opt(ArgString({ minLength: 1, maxLength: 256 })), agent_setup: Opt(Setup) })),
  object: Opt(Body({ object_id: ArgString({ minLength: 1, maxLength: 200 }), agent_setup: Opt(Setup) })),
});

export const CreateAgentBody = Body({
  name: Type.String({ minLength: 1, maxLength: 256, pattern: '^[^\\u0000]*$' }),
  version: Opt(ArgString({ minLength: 1, maxLength: 256 })),
  source: Opt(SourceSchema),
});

const filters = {
  name: Type.Optional(Text(256)),
  search: Type.Optional(Text(256)),
  version: Type.Optional(Text(256)),
};
export const AgentListQuery = Type.Object(
  { ...PageQuerySchema.properties, ...filters, is_public: Type.Optional(Type.Boolean()) },
  { additionalProperties: false },
);
export const PublicAgentListQuery = Type.Object({ ...PageQuerySchema.properties, ...filters }, { additionalProperties: false });

/** The source as it was given: parts and fields not given are left out. */
const Maybe = <T extends TSchema>(t: T) => Type.Optional(OrNull(t));
const SetupView = Maybe(Type.Array(Type.String()));
const SourceView = Type.Object({
  type: Type.String(),
  npm: Maybe(Type.Object({ package_name: Type.String(), registry_url: Maybe(Type.String()), npm_version: Maybe(Type.String()), agent_setup: SetupView })),
  pip: Maybe(Type.Object({ package_name: Type.String(), registry_url: Maybe(Type.String()), pip_version: Maybe(Type.String()), agent_setup: SetupView })),
  git: Maybe(Type.Object({ repository: Type.String(), ref: Maybe(Type.String()), agent_setup: SetupView })),
  object: Maybe(Type.Object({ object_id: Type.String(), agent_setup: SetupView })),
});

export const AgentViewSchema = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    create_time_ms: Int,
    is_public: Type.Boolean(),
    version: OrNull(Type.String()),
    source: OrNull(SourceView),
  },
  { title: 'AgentView', description: 'an agent: what is installed into a devbox that mounts it' },
);
export const AgentListView = pageSchema('agents', AgentViewSchema);
export const DevboxCountsView = Type.Object(
  { counts: Type.Record(Type.String(), Int), total_count: Int },
  { description: "AgentDevboxCountsView: per agent name, the account's devboxes that have not ended and mounted it" },
);

export const toView = (a: Agent) => ({
  id: a.id,
  name: a.name,
  create_time_ms: a.createTimeMs,
  is_public: a.isPublic,
  version: a.version,
  source: a.source,
});
