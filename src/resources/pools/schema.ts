import { BIG, ddl, KEY } from '../../platform/store/ddl.js';
import type { ModuleSchema } from '../../platform/store/module-schema.js';

/**
 * The warm pools' settings, one row per size and blueprint ('': the default image) `devboxd pools set` was
 * given (without a row the default size of the default image keeps DEVBOXD_WARM_POOL's count, any other pool
 * none), and the account pooled boxes belong
 * to until a create takes them (devboxes' POOL_ACCOUNT): a row, since every box's account is one, and no key
 * is ever made for it.
 */
export const POOLS_SCHEMA: ModuleSchema = {
  module: 'pools',
  steps: [
    ddl`INSERT INTO accounts (id, name, create_time_ms) VALUES ('', '(warm pools)', 0);
     CREATE TABLE warm_pools (
       size ${KEY} NOT NULL,
       blueprint_id ${KEY} NOT NULL DEFAULT '',
       count INTEGER NOT NULL,
       update_time_ms ${BIG} NOT NULL,
       PRIMARY KEY (size, blueprint_id)
     );`,
  ],
};
