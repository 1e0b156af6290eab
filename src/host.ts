import type { Config } from './config.js';
import type { Logger } from './lib/logger.js';
import type { BlobStore } from './platform/blob/types.js';
import type { BoxServices } from './platform/boxlink/index.js';
import type { HttpFronts } from './platform/http/fronts.js';
import type { JobRunner } from './platform/jobs/job-runner.js';
import type { AnyModule, ResourceModule } from './platform/module/index.js';
import type { SealedTexts } from './platform/sealing/resealing.js';
import type { OutboundGuard } from './platform/outbound/index.js';
import type { KeySource } from './platform/sealing/master-key.js';
import type { Sealer } from './platform/sealing/sealer.js';
import type { Store } from './platform/store/types.js';
import type { RuntimeDriver } from './runtime/driver.js';

/**
 * What the server has before any resource module is built, and gives every module: the host-wide settings,
 * the database, the blob store, the sandbox runtime, the outbound guard, the durable job runner (modules
 * register their job kinds), the box services (modules mount their routes) and the master key.
 */
export interface Host {
  config: Config;
  logger: Logger;
  /** DEVBOXD_NODE_NAME: the devboxes, snapshots, jobs and x-request-id markers this server owns. */
  node: string;
  store: Store;
  blobs: BlobStore;
  runtime: RuntimeDriver;
  /** The one gate of every connection opened for a tenant: gateway, MCP, registries, git. */
  outbound: OutboundGuard;
  jobs: JobRunner;
  /** The HTTP services a box reaches from inside (MCP hub, agent gateway, git relay, tunnels). */
  boxServices: BoxServices;
  keys: KeySource;
  /** What modules serve on the API port ahead of the API (tunnels, PTY endpoints, SSH over TLS). */
  fronts: HttpFronts;
  /** The authenticated cipher under the master key (secret values, tokens, x-request-id answers). */
  sealer: Sealer;
}

/** What a module's CLI command works with: no server runs in the process, and no module is built. */
export interface CommandContext {
  /** The host-wide settings of the environment the command runs in. */
  config: Config;
  io: { out(text: string): void; err(text: string): void };
  /** Opens the database the server uses (DEVBOXD_DATABASE_URL, else SQLite in the data dir), runs `fn`, closes it. */
  withStore(fn: (store: Store) => Promise<number>): Promise<number>;
  /** Every module's sealed texts (for key rotation). */
  sealed: readonly SealedTexts[];
}

/** A resource module of this server: see platform/module/contract.ts and the README's layout section. */
export type Module<C = undefined> = ResourceModule<Host, C, CommandContext>;

/** A module of any settings type, as lists of modules hold them. */
export type AnyHostModule = AnyModule<Host, CommandContext>;
