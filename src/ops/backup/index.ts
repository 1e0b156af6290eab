/** Backup and restore of a data dir (issue 29, item 2): what the operator CLI takes from this folder. */
export { backupCommands } from './commands.js';
