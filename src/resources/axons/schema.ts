import { BIG, ddl, KEY, octets } from '../../platform/store/ddl.js';
import type { ModuleSchema } from '../../platform/store/module-schema.js';

/**
 * Axons, their events and the devboxes' broker mounts. `last_sequence` is the axon's counter: a publish
 * increments it with an UPDATE ... RETURNING in the transaction that inserts the event, so the row lock (or
 * SQLite's single writer) orders publishes and two servers sharing PostgreSQL never hand out one sequence
 * twice. Events are kept per axon up to a cap (see AXON_EVENTS_KEPT). A broker mount records the last
 * sequence written to its agent, so an agent started again (resume, restart) gets what it missed.
 *
 * v2: payload bytes kept, counted where a publish already writes: per event (`bytes`, with an index that
 * lets retention and paged reads find the oldest events without reading payloads), per axon (`event_bytes`)
 * and per account (`axon_accounts`, one row whose lock orders an account's publishes and deletes).
 */
export const AXONS_SCHEMA: ModuleSchema = {
  module: 'axons',
  steps: [
    ddl`CREATE TABLE axons (
       id ${KEY} PRIMARY KEY,
       account_id TEXT NOT NULL REFERENCES accounts(id),
       name ${KEY},
       metadata TEXT NOT NULL,
       created_at_ms ${BIG} NOT NULL,
       deleted_at_ms ${BIG},
       last_sequence ${BIG} NOT NULL DEFAULT 0
     );
     CREATE INDEX axons_account ON axons (account_id, id);
     CREATE TABLE axon_events (
       axon_id ${KEY} NOT NULL REFERENCES axons(id),
       sequence ${BIG} NOT NULL,
       event_type TEXT NOT NULL,
       origin TEXT NOT NULL,
       payload TEXT NOT NULL,
       source TEXT NOT NULL,
       timestamp_ms ${BIG} NOT NULL,
       PRIMARY KEY (axon_id, sequence)
     );
     CREATE TABLE axon_broker_mounts (
       devbox_id ${KEY} NOT NULL REFERENCES devboxes(id) ON DELETE CASCADE,
       position INTEGER NOT NULL,
       axon_id ${KEY} NOT NULL REFERENCES axons(id),
       protocol TEXT NOT NULL,
       agent_binary TEXT NOT NULL,
       launch_args TEXT NOT NULL,
       working_directory TEXT,
       delivered_sequence ${BIG} NOT NULL,
       PRIMARY KEY (devbox_id, position)
     );
     CREATE INDEX axon_broker_mounts_axon ON axon_broker_mounts (axon_id);`,
    ddl`ALTER TABLE axons ADD COLUMN event_bytes ${BIG} NOT NULL DEFAULT 0;
     ALTER TABLE axon_events ADD COLUMN bytes ${BIG} NOT NULL DEFAULT 0;
     UPDATE axon_events SET bytes = ${octets('payload')};
     UPDATE axons SET event_bytes = (SELECT COALESCE(SUM(bytes), 0) FROM axon_events WHERE axon_id = axons.id);
     CREATE INDEX axon_events_bytes ON axon_events (axon_id, sequence, bytes);
     CREATE TABLE axon_accounts (
       account_id ${KEY} PRIMARY KEY REFERENCES accounts(id),
       event_bytes ${BIG} NOT NULL
     );
     INSERT INTO axon_accounts (account_id, event_bytes) SELECT account_id, SUM(event_bytes) FROM axons GROUP BY account_id;`,
  ],
};
