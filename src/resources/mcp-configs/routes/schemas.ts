import { Type } from 'typebox';
import { Body, Int, Opt, OrNull, PageQuerySchema, Text } from '../../../platform/http/schemas/common.js';
import type { HeaderInput, McpConfig, McpConfigInput } from '../types.js';
import { MAX_ALLOWED_TOOLS, MAX_CUSTOM_HEADERS } from '../validate.js';

const AuthMechanism = Body({
  type: Type.String({ maxLength: 32 }),
  key: Opt(Type.String({ maxLength: 256 })),
});

/** Values are checked by the service, which names the entry; only sizes are bounded here. */
const CustomHeader = Body({
  name: Type.String({ maxLength: 256 }),
  value: Opt(Type.String({ maxLength: 8192 })),
  secret: Opt(Type.String({ maxLength: 256 })),
});

const fields = {
  description: Opt(Text(1000)),
  auth_mechanism: Opt(AuthMechanism),
  custom_headers: Opt(Type.Array(CustomHeader, { maxItems: MAX_CUSTOM_HEADERS })),
};

export const CreateBody = Body({
  name: Text(256),
  endpoint: Type.String({ maxLength: 2048 }),
  allowed_tools: Type.Array(Type.String({ maxLength: 256 }), { maxItems: MAX_ALLOWED_TOOLS }),
  ...fields,
});

export const UpdateBody = Body({
  name: Opt(Text(256)),
  endpoint: Opt(Type.String({ maxLength: 2048 })),
  allowed_tools: Opt(Type.Array(Type.String({ maxLength: 256 }), { maxItems: MAX_ALLOWED_TOOLS })),
  ...fields,
});

export interface ConfigBodyWire {
  name?: string | null;
  endpoint?: string | null;
  allowed_tools?: string[] | null;
  description?: string | null;
  auth_mechanism?: { type: string; key?: string | null } | null;
  custom_headers?: HeaderInput[] | null;
}

export const toInput = (b: ConfigBodyWire | null | undefined): McpConfigInput => ({
  name: b?.name,
  endpoint: b?.endpoint,
  allowedTools: b?.allowed_tools,
  description: b?.description,
  auth: b?.auth_mechanism,
  customHeaders: b?.custom_headers,
});

export const ListQuery = Type.Intersect([
  PageQuerySchema,
  Type.Object({
    id: Type.Optional(Text(200)),
    name: Type.Optional(Text(256)),
    search: Type.Optional(Text(256)),
  }),
]);

export const TokenBody = Body({
  mcp_config: Type.String({ minLength: 1, maxLength: 256 }),
  secret: Type.String({ minLength: 1, maxLength: 256 }),
});

/** McpConfigView: a custom header shows its name, and the id of its secret when one backs it; never a value. */
export const McpConfigViewSchema = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    endpoint: Type.String(),
    allowed_tools: Type.Array(Type.String()),
    auth_mechanism: Type.Object({ type: Type.String(), key: Type.Optional(OrNull(Type.String())) }),
    create_time_ms: Int,
    description: OrNull(Type.String()),
    custom_headers: Type.Array(Type.Object({ name: Type.String(), secret: Type.Optional(Type.String()) })),
  },
  { title: 'McpConfigView', description: 'an MCP config: an upstream MCP server and the tools boxes may call' },
);

export const McpTokenViewSchema = Type.Object(
  {
    token: Type.String(),
    allowed_tools: Type.Array(Type.String()),
    devbox_id: Type.String(),
    endpoint: Type.String(),
    mcp_config_id: Type.String(),
    url: Type.String({ description: 'the MCP hub URL inside the box (RL_MCP_URL)' }),
  },
  { title: 'McpTokenView', description: 'a token a devbox uses to reach the MCP hub' },
);

export const toView = (c: McpConfig) => ({
  id: c.id,
  name: c.name,
  endpoint: c.endpoint,
  allowed_tools: c.allowedTools,
  auth_mechanism: c.auth.key ? { type: c.auth.type, key: c.auth.key } : { type: c.auth.type },
  create_time_ms: c.createTimeMs,
  description: c.description,
  custom_headers: c.customHeaders.map((h) => (h.secretId ? { name: h.name, secret: h.secretId } : { name: h.name })),
});
