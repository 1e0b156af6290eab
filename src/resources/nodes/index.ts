/** The nodes resource as other modules reach it: through this file only (checked by `npm run lint`). */
export * from './commands.js';
export * from './lease.js';
export * from './node-service.js';
export * from './placement.js';
export * from './sql-node-store.js';
export * from './types.js';
export * from './module.js';
