/** What other modules may use of the accounts resource (its routes are registered by resources/index.ts). */
export { SqlAccountStore } from './sql-account-store.js';
