/**
 * The layers resource as other modules reach it: every import from outside this folder comes through this file
 * (checked by `npm run lint`, .dependency-cruiser.mjs), so what the resource offers is listed in one place.
 */
export * from './config.js';
export * from './layer-blobs.js';
export * from './module.js';
export * from './schema.js';
export * from './sql-layer-store.js';
