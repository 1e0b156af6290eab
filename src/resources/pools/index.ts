/** The warm pools as other modules reach them: through this file only (checked by `npm run lint`). */
export * from './config.js';
export * from './module.js';
export * from './sql-pool-store.js';
export * from './warm-pools.js';
