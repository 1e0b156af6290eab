/** The audit trail as other modules reach it: through this file only (checked by `npm run lint`). */
export * from './audit-log.js';
export * from './audit-record.js';
export * from './config.js';
export * from './module.js';
export * from './sql-audit-store.js';
