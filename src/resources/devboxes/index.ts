/**
 * What other modules may use of the devbox resource. Reach-ins to its other files are listed as exceptions in
 * .dependency-cruiser.mjs until they move behind this file (exporting them here now would close import cycles
 * through the resources that devboxes itself uses).
 */
export type { DevboxStore, DevboxTransition } from './devbox-store.js';
export { SqlDevboxStore } from './sql-devbox-store.js';
