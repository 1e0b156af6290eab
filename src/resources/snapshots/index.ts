/** What other modules may use of the snapshots resource (its routes are registered by resources/index.ts). */
export type { SnapshotStore } from './snapshot-store.js';
export { SqlSnapshotStore } from './sql-snapshot-store.js';
