/**
 * The executions resource as other modules reach it: every import from outside this folder comes through this file
 * (checked by `npm run lint`, .dependency-cruiser.mjs), so what the resource offers is listed in one place.
 */
export * from './box-jobs.js';
export * from './devbox-extensions.js';
export * from './devbox-log.js';
export * from './execution-service.js';
export * from './execution-store.js';
export * from './output-budget.js';
export * from './output-storage.js';
export * from './output.js';
export * from './routes/index.js';
export * from './routes/schemas.js';
export * from './sql-execution-store.js';
export * from './sql-log-store.js';
export * from './types.js';
export * from './module.js';
