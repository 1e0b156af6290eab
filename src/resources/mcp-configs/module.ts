import type { Module } from '../../host.js';
import { boxServicesUrl } from '../../platform/boxlink/index.js';
import { devboxesModule } from '../devboxes/index.js';
import { secretsModule } from '../secrets/index.js';
import { buildMcp, type McpModule } from './build-mcp.js';
import { mcpConfigRoutes } from './routes/index.js';
import { MCP_SEALED } from './reseal.js';
import { MCP_SCHEMA } from './schema.js';

declare module '../../platform/module/contract.js' {
  interface Services {
    /** MCP configs, the box tokens and the MCP hub (served to boxes at /mcp on the box-services link). */
    mcp: McpModule;
  }
}

/** MCP configs: boxes reach their upstream MCP servers through the hub with a token, never a credential. */
export const mcpConfigsModule: Module = {
  name: 'mcp-configs',
  needs: [devboxesModule, secretsModule],
  schema: MCP_SCHEMA,
  sealed: MCP_SEALED,
  build({ host, use }) {
    const mcp = buildMcp({
      store: host.store,
      secrets: use('secrets'),
      sealer: host.sealer,
      hubUrl: `${boxServicesUrl(host.config)}/mcp`,
      outbound: host.outbound,
      log: host.logger.child({ component: 'mcp-hub' }),
    });
    host.boxServices.route('/mcp', mcp.hub.handle);
    const ext = use('devboxExtensions');
    ext.resolver(mcp.devbox.resolver);
    ext.environment(mcp.devbox.environment);
    ext.enricher(mcp.devbox.enricher);
    ext.onStopped(mcp.devbox.onStopped);
    return { mcp };
  },
  routes: (app, s) => app.register(mcpConfigRoutes, { configs: s.mcp.configs, tokens: s.mcp.tokens, devboxes: s.devboxes, hubUrl: s.mcp.hubUrl }),
  start: { adopt: (s) => s.mcp.reconcile() },
  close: (s) => s.mcp.close(),
};
