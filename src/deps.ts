import * as grpc from '@grpc/grpc-js';
import { type Config, ConfigError } from './config.js';
import type { Host } from './host.js';
import type { AnyHostModule } from './host.js';
import type { Logger } from './lib/logger.js';
import { openBlobStore } from './platform/blob/open.js';
import { BoxServices } from './platform/boxlink/index.js';
import { HttpFronts } from './platform/http/fronts.js';
import { JobRunner } from './platform/jobs/job-runner.js';
import { type Composition, compose, moduleConfigs, type Services } from './platform/module/index.js';
import { OutboundGuard } from './platform/outbound/index.js';
import { openKeySource } from './platform/sealing/master-key.js';
import { Sealer } from './platform/sealing/sealer.js';
import type { IdempotencyStore } from './platform/store/types.js';
import { openStore } from './resources/core-store.js';
import { MODULES, moduleSchemas } from './resources/index.js';
import type { RuntimeDriver } from './runtime/driver.js';
import { RemoteRuntime } from './runtime/rpc/remote-runtime.js';

/** What the composition root built: the host's parts and every module's services, by name. */
export type Deps = Host &
  Services & {
    idempotency: IdempotencyStore;
    composition: Composition;
    /** Stops background work and closes what was opened, modules in reverse order. Devboxes keep running. */
    close(): Promise<void>;
  };

export interface BuildOptions {
  /** Replaces the shipped driver (fast tests pass a stub; never the server itself). */
  runtime?: RuntimeDriver;
  /** The resource modules (default: resources/index.ts); a test adds a fixture module here. */
  modules?: readonly AnyHostModule[];
}

/**
 * The composition root: opens what the host has (database, blob store, runtime, master key, job runner, box
 * services), builds the modules in the order their needs give, resumes the durable jobs and runs the start
 * phases. Nothing here names a resource: they are listed in resources/index.ts.
 */
export async function buildDeps(config: Config, logger: Logger, opts: BuildOptions = {}): Promise<Deps> {
  const modules = opts.modules ?? MODULES;
  // Every module's settings parse before anything opens: a bad value stops the start here, naming it.
  const configs = moduleConfigs(modules, config.env);
  const store = await openStore({
    dataDir: config.dataDir,
    databaseUrl: config.databaseUrl,
    modules: moduleSchemas(modules),
    log: logger.child({ component: 'store' }),
  });
  // The blob store (local files or S3) is opened before anything runs: an unreachable bucket stops the start here.
  const blobs = await openBlobStore(config.blob, config.dataDir, logger.child({ component: 'blobs' }));
  const outbound = new OutboundGuard({ allow: config.outboundAllow, boxSubnet: config.network.boxSubnet });
  // The sandboxes are the node agent's: this process reaches them over its RPC, and holds no privilege.
  const runtime = opts.runtime ?? (await connectAgent(config));
  // The agent prepares (on a fresh machine that builds the base image: a minute or more) while the modules are
  // built; their own checks at start (the axon SQL probe) speak meanwhile rather than after it.
  const prepared = runtime.prepare();
  prepared.catch(() => undefined);
  const keyLog = logger.child({ component: 'secrets' });
  const keys = openKeySource({ dataDir: config.dataDir, secretKey: config.secretKey, previousKeys: config.secretKeyPrevious, warn: (msg) => keyLog.warn(msg) });
  // Modules register their job kinds as they are built; `resume` runs after all are.
  const jobs = new JobRunner(store.jobs, config.nodeName, {}, logger.child({ component: 'jobs' }));
  const boxServices = new BoxServices({
    runtime,
    dataDir: config.dataDir,
    socketDir: config.roles.boxServicesDir,
    port: config.boxServicesPort,
    log: logger.child({ component: 'box-services' }),
  });
  boxServices.start();
  const host: Host = {
    config,
    logger,
    node: config.nodeName,
    store,
    blobs,
    runtime,
    outbound,
    jobs,
    boxServices,
    keys,
    fronts: new HttpFronts(),
    sealer: new Sealer(keys),
  };
  const composition = await compose(modules, host, configs, logger);
  await prepared;
  // Jobs a restart cut (captures, suspends, builds, runs) settle first: the start phases look at what they left.
  await jobs.resume();
  await composition.start();
  return {
    ...host,
    ...composition.services,
    idempotency: store.idempotency,
    composition,
    async close() {
      jobs.stop();
      await boxServices.close();
      await composition.close();
      await store.close();
      await runtime.close?.();
    },
  };
}

/** The node agent this API server drives (DEVBOXD_NODE_URL); it must be the node this server is named for. */
async function connectAgent(config: Config): Promise<RuntimeDriver> {
  const { agent, token, tls } = config.roles;
  const credentials = agent.startsWith('https:')
    ? grpc.credentials.createSsl(Buffer.from(tls.ca!), tls.clientKey ? Buffer.from(tls.clientKey) : null, tls.clientCert ? Buffer.from(tls.clientCert) : null)
    : undefined;
  const runtime = await RemoteRuntime.connect({ address: agent, token: token!, credentials });
  if (runtime.node !== config.nodeName) {
    await runtime.close();
    throw new ConfigError(`the node agent at ${agent} is node ${runtime.node}, this server is DEVBOXD_NODE_NAME=${config.nodeName}`);
  }
  return runtime;
}
