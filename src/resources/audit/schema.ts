import { BIG, ddl, KEY, SERIAL_KEY } from '../../platform/store/ddl.js';
import type { ModuleSchema } from '../../platform/store/module-schema.js';

/**
 * The audit trail: one row per state-changing API request, refused ones included, written by every API server
 * that shares the database (`node` says which) and never updated; the retention prune deletes the oldest.
 * `account_id` and `key_id` are null when the key was refused (`key_last4` then holds the last four
 * characters of what was sent, as `devboxd keys list` shows a key's). `resource_id` is the id the path names,
 * `answer_id` the one a successful answer names when it differs (a create's new id, a snapshot's, an
 * execution's). Indexes serve the filters of `devboxd audit`: time, account and time, either id.
 */
export const AUDIT_SCHEMA: ModuleSchema = {
  module: 'audit',
  steps: [
    ddl`CREATE TABLE audit_log (
       seq ${SERIAL_KEY},
       time_ms ${BIG} NOT NULL,
       node TEXT NOT NULL,
       account_id ${KEY},
       key_id ${KEY},
       key_last4 TEXT,
       method TEXT NOT NULL,
       route TEXT NOT NULL,
       resource_id ${KEY},
       answer_id ${KEY},
       status INTEGER NOT NULL,
       duration_ms INTEGER NOT NULL,
       ip TEXT,
       forwarded_for TEXT,
       peer TEXT,
       user_agent TEXT,
       req_id TEXT
     );
     CREATE INDEX audit_log_time ON audit_log (time_ms);
     CREATE INDEX audit_log_account ON audit_log (account_id, time_ms);
     CREATE INDEX audit_log_resource ON audit_log (resource_id);
     CREATE INDEX audit_log_answer ON audit_log (answer_id);`,
  ],
};
