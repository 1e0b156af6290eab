export { TUNNELS_SCHEMA } from './schema.js';
export { tunnelRoutes } from './routes/index.js';
export { TunnelFront } from './routes/tunnel-front.js';
export { TunnelService } from './tunnel-service.js';

export { tunnelsModule, WAKE_TIMEOUT_MS } from './module.js';

// What other resources import of this one's files: they reach it only through this index (npm run lint).
export * from './routes/target.js';
