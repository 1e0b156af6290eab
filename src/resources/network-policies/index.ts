/**
 * The network policies resource as other modules reach it: every import from outside this folder comes through this file
 * (checked by `npm run lint`, .dependency-cruiser.mjs), so what the resource offers is listed in one place.
 */
export * from './devbox-extensions.js';
export * from './network-policy-service.js';
export * from './routes/index.js';
export * from './schema.js';
export * from './types.js';
export * from './module.js';
