import type { DevboxService } from '../../devboxes/index.js';
import { DevboxIdParams } from '../../../platform/http/schemas/shared.js';
import { resourceModule } from '../../../platform/http/resource-module.js';
import { IdParams, pageEnvelope, pageSchema, replies, toPageQuery } from '../../../platform/http/schemas/common.js';
import type { McpConfigService } from '../mcp-config-service.js';
import type { McpTokens } from '../mcp-tokens.js';
import { mcpConfigOperations } from './operations.js';
import { CreateBody, ListQuery, McpConfigViewSchema, McpTokenViewSchema, TokenBody, toInput, toView, UpdateBody } from './schemas.js';

export interface McpRouteOptions {
  configs: McpConfigService;
  tokens: McpTokens;
  devboxes: DevboxService;
  /** RL_MCP_URL as boxes see it. */
  hubUrl: string;
}

const ListView = pageSchema('mcp_configs', McpConfigViewSchema);
const view = { response: replies(McpConfigViewSchema) };

/**
 * MCP configs. The SDK's restricted-key scopes have no MCP type, so RESOURCE_TYPE_ACCOUNT governs them (like
 * API keys); create_mcp_token is a devbox write, like creating a box with `mcp`.
 */
export const mcpConfigRoutes = resourceModule('RESOURCE_TYPE_ACCOUNT', mcpConfigOperations, (app, opts: McpRouteOptions) => {
  const { configs, tokens, devboxes, hubUrl } = opts;

  app.post('/v1/mcp-configs', { schema: { body: CreateBody, ...view } }, async (req) => {
    return toView(await configs.create(req.principal.accountId, toInput(req.body)));
  });

  app.get('/v1/mcp-configs', { schema: { querystring: ListQuery, response: replies(ListView) } }, async (req) => {
    const q = req.query;
    const page = await configs.list(req.principal.accountId, toPageQuery(q), {
      id: q.id || undefined,
      name: q.name || undefined,
      search: q.search || undefined,
    });
    return pageEnvelope('mcp_configs', { ...page, items: page.items.map(toView) });
  });

  app.get('/v1/mcp-configs/:id', { schema: { params: IdParams, ...view } }, async (req) => {
    return toView(await configs.get(req.principal.accountId, req.params.id));
  });

  app.post('/v1/mcp-configs/:id', { schema: { params: IdParams, body: UpdateBody, ...view } }, async (req) => {
    return toView(await configs.update(req.principal.accountId, req.params.id, toInput(req.body)));
  });

  app.post('/v1/mcp-configs/:id/delete', { schema: { params: IdParams, ...view } }, async (req) => {
    return toView(await configs.delete(req.principal.accountId, req.params.id));
  });

  app.post(
    '/v1/devboxes/:id/create_mcp_token',
    // A retried x-request-id answers the same token, kept sealed for the replay window (never in clear).
    {
      schema: { params: DevboxIdParams, body: TokenBody, response: replies(McpTokenViewSchema) },
      config: { resource: 'RESOURCE_TYPE_DEVBOXES', idempotent: 'sealed' },
    },
    async (req) => {
      const devbox = await devboxes.get(req.principal.accountId, req.params.id);
      const { token, config } = await tokens.createToken(devbox, req.body.mcp_config, req.body.secret);
      return { token, allowed_tools: config.allowedTools, devbox_id: devbox.id, endpoint: config.endpoint, mcp_config_id: config.id, url: hubUrl };
    },
  );
});
