/**
 * The devbox resource as other modules reach it: every import from outside this folder comes through this file
 * (checked by `npm run lint`, .dependency-cruiser.mjs), so what the resource offers is listed in one place.
 */
export * from './boot-steps.js';
export * from './box-services-link.js';
export * from './create-input.js';
export * from './devbox-service.js';
export * from './devbox-store.js';
export * from './extensions.js';
export * from './hooks.js';
export * from './lifecycle.js';
export * from './resources.js';
export * from './routes/index.js';
export * from './routes/mounts.js';
export * from './routes/schemas.js';
export * from './sql-devbox-store.js';
export * from './status-events.js';
export * from './supervisor.js';
export * from './types.js';
export * from './module.js';
export * from './extension-registry.js';
