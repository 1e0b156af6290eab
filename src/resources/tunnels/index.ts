export { TUNNELS_SCHEMA } from './schema.js';
export { tunnelRoutes } from './routes/index.js';
export { TunnelFront } from './routes/tunnel-front.js';
export { TunnelService } from './tunnel-service.js';

/** How long a request to a suspended box with wake_on_http waits for it to run before a 503. */
export const WAKE_TIMEOUT_MS = 60_000;

// What other resources import of this one's files: they reach it only through this index (npm run lint).
export * from './routes/target.js';
