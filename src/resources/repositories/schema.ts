import { BIG, ddl, KEY } from '../../platform/store/ddl.js';
import type { ModuleSchema } from '../../platform/store/module-schema.js';

/**
 * Repository connections and their inspections. A connection's GitHub token is stored only sealed (as
 * secret values are, AAD bound to the connection), never returned. One connection per owner/name in an
 * account is a constraint. Inspections go with their connection; their manifests are JSON documents in the
 * wire shape (the manifest is the product, stored as it is served).
 */
export const REPOSITORIES_SCHEMA: ModuleSchema = {
  module: 'repositories',
  steps: [
    ddl`CREATE TABLE repositories (
       id ${KEY} PRIMARY KEY,
       account_id TEXT NOT NULL REFERENCES accounts(id),
       owner ${KEY} NOT NULL,
       name ${KEY} NOT NULL,
       blueprint_id TEXT,
       token_sealed TEXT,
       create_time_ms ${BIG} NOT NULL,
       CONSTRAINT repositories_account_repo UNIQUE (account_id, owner, name)
     );
     CREATE TABLE repository_inspections (
       id ${KEY} PRIMARY KEY,
       repository_id ${KEY} NOT NULL REFERENCES repositories(id) ON DELETE CASCADE,
       status TEXT NOT NULL,
       commit_sha TEXT NOT NULL DEFAULT '',
       inspected_at_ms ${BIG} NOT NULL,
       manifest TEXT,
       user_manifest TEXT,
       failure_reason TEXT
     );
     CREATE INDEX repository_inspections_repo ON repository_inspections (repository_id, id);`,
    // At most one pending inspection per connection, as a constraint (two concurrent inspect calls raced a
    // check-then-insert); older duplicates settle failed first.
    ddl`UPDATE repository_inspections SET status = 'inspection_failed', failure_reason = 'superseded by a newer pending inspection'
       WHERE status = 'inspection_pending' AND id NOT IN (SELECT MAX(id) FROM repository_inspections WHERE status = 'inspection_pending' GROUP BY repository_id);
     CREATE UNIQUE INDEX repository_inspections_one_pending ON repository_inspections (repository_id) WHERE status = 'inspection_pending';`,
  ],
};
