import { type Section, section } from '../schema.js';

/** `audit:` the audit trail of state-changing requests (src/resources/audit/config.ts parses it). */
export const AUDIT: Section = section('audit', 'the audit trail of state-changing requests: how long it is kept, where it is shipped (see `devboxd audit`)', [
  ['DEVBOXD_AUDIT_RETENTION_DAYS', 'integer', '`90`', 'days an audit row is kept in the `audit_log` table; older ones are pruned; `0` keeps them for ever'],
  [
    'DEVBOXD_AUDIT_LOG',
    'string',
    '— (the table only)',
    "`stdout`, or a file the audit records are appended to as JSON lines (a relative path is under the API server's data dir, `<data>/api` under `all`)",
  ],
  [
    'DEVBOXD_AUDIT_QUEUE',
    'integer',
    '`10000`',
    'audit records waiting for their write, at most; past it a record is dropped (counted in `devboxd_audit_dropped_total`, logged): a request never waits on the audit trail',
  ],
]);
