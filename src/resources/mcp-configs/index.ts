/** The MCP configs resource as other modules reach it (checked by `npm run lint`). */
export { buildMcp, type McpModule, UPSTREAM_TIMEOUTS } from './build-mcp.js';
export { MCP_SCHEMA } from './schema.js';
export { mcpConfigRoutes } from './routes/index.js';
export * from './reseal.js';
export * from './module.js';
