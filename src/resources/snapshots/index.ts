/**
 * The snapshots resource as other modules reach it: every import from outside this folder comes through this file
 * (checked by `npm run lint`, .dependency-cruiser.mjs), so what the resource offers is listed in one place.
 */
export * from './devbox-extensions.js';
export * from './routes/index.js';
export * from './routes/read.js';
export * from './snapshot-service.js';
export * from './snapshot-store.js';
export * from './sql-snapshot-store.js';
export * from './suspend-service.js';
export * from './module.js';
