/** The repositories resource as other modules reach it: through this file only (checked by `npm run lint`). */
export * from './build.js';
export * from './module.js';
