import { BIG, ddl, KEY } from '../../platform/store/ddl.js';
import type { ModuleSchema } from '../../platform/store/module-schema.js';

/**
 * The warm pools' settings, one row per size `devboxd pools set` was given (a size without a row keeps
 * DEVBOXD_WARM_POOL's count for the default size, none for the others), and the account pooled boxes belong
 * to until a create takes them (devboxes' POOL_ACCOUNT): a row, since every box's account is one, and no key
 * is ever made for it.
 */
export const POOLS_SCHEMA: ModuleSchema = {
  module: 'pools',
  steps: [
    ddl`INSERT INTO accounts (id, name, create_time_ms) VALUES ('', '(warm pools)', 0);
     CREATE TABLE warm_pools (
       size ${KEY} PRIMARY KEY,
       count INTEGER NOT NULL,
       update_time_ms ${BIG} NOT NULL
     );`,
  ],
};
