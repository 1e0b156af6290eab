export { AGENTS_SCHEMA } from './schema.js';
export { agentRoutes } from './routes/index.js';
export { AgentService } from './agent-service.js';
export { agentMountExtensions } from './devbox-extensions.js';
export type { Agent, AgentSource } from './types.js';

// What other resources import of this one's files: they reach it only through this index (npm run lint).
export * from './sql-agent-store.js';
export * from './module.js';
