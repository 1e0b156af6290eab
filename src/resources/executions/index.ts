/** What other modules may use of the executions resource (its routes are registered by resources/index.ts). */
export type { ExecutionStore, LogStore } from './execution-store.js';
export { SqlExecutionStore } from './sql-execution-store.js';
export { SqlLogStore } from './sql-log-store.js';
