/**
 * DEVBOXD_ROLE=node: the node agent. It locks the data dir, runs the Linux driver and serves it on
 * DEVBOXD_NODE_URL to API servers holding the cluster token; it opens no database and no tenant-facing port.
 */
import fs from 'node:fs';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import type { Config } from '../config.js';
import { lockDataDir } from '../lib/data-dir-lock.js';
import { createLogger, type Logger } from '../lib/logger.js';
import { egressSettings } from '../network-config.js';
import { OutboundGuard } from '../platform/outbound/index.js';
import { createRuntime, type RuntimeOptions } from '../runtime/index.js';
import { NodeAgent } from '../runtime/rpc/agent.js';
import { grpcTarget } from '../runtime/rpc/protocol.js';

/** The Linux driver's options, from the host-wide settings. */
export function runtimeOptions(config: Config, logger: Logger): RuntimeOptions {
  const outbound = new OutboundGuard({ allow: config.outboundAllow, boxSubnet: config.network.boxSubnet });
  return {
    dataDir: config.dataDir,
    imageDir: config.imageDir,
    logger: logger.child({ component: 'runtime' }),
    maxCommandsPerBox: config.maxExecutionsPerDevbox,
    maxCommands: config.maxExecutions,
    egress: config.network.enabled ? egressSettings(config.network, config.nodeName) : undefined,
    registry: {
      defaultRegistry: config.registry.defaultRegistry,
      insecure: config.registry.insecure,
      allow: config.registry.allow,
      outbound,
      limits: { maxLayerBytes: config.registry.maxLayerBytes, maxUnpackedBytes: config.registry.maxUnpackedBytes },
    },
  };
}

export interface RunningAgent {
  stop(): Promise<void>;
}

export async function startNodeAgent(config: Config): Promise<RunningAgent> {
  const lock = await lockDataDir(config.dataDir);
  const logger = createLogger(config.logLevel).child({ role: 'node' });
  process.on('unhandledRejection', (err) => logger.error({ err }, 'unhandled promise rejection (contained)'));
  const driver = createRuntime(runtimeOptions(config, logger));
  const { agent: address, token, tls, apiUser } = config.roles;
  const agent = new NodeAgent({ driver, node: config.nodeName, token: token!, log: logger.child({ component: 'agent' }) });
  if (address.startsWith('unix:')) {
    const file = grpcTarget(address).slice('unix://'.length);
    fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o750 });
    fs.rmSync(file, { force: true });
    await agent.listen(`unix://${file}`);
    // Root and the API server's group only; the token is asked of every call all the same.
    const gid = groupOf(apiUser);
    fs.chownSync(file, 0, gid ?? 0);
    fs.chmodSync(file, 0o660);
  } else {
    const credentials = tls.cert
      ? grpc.ServerCredentials.createSsl(
          tls.ca ? Buffer.from(tls.ca) : null,
          [{ cert_chain: Buffer.from(tls.cert), private_key: Buffer.from(tls.key!) }],
          !!tls.ca,
        )
      : grpc.ServerCredentials.createInsecure();
    const u = new URL(address);
    await agent.listen(`${u.hostname.includes(':') ? `[${u.hostname}]` : u.hostname}:${u.port || (u.protocol === 'https:' ? 443 : 80)}`, credentials);
  }
  process.stdout.write(`devboxd node agent ${config.nodeName} on ${address}\n`);
  // Under way while the API server loads; its Prepare call joins it (a failure is logged here and retried there).
  agent.prepare().catch((err: unknown) => logger.error({ err }, 'preparing the runtime failed'));
  let stopping: Promise<void> | undefined;
  return {
    stop: () =>
      (stopping ??= (async () => {
        // Calls still open (watchers, streams of the API server) end now: the boxes keep running.
        const forced = setTimeout(() => agent.forceClose(), 5_000);
        await agent.close();
        clearTimeout(forced);
        await driver.close?.();
        await lock.release();
      })()),
  };
}

function groupOf(user: string): number | undefined {
  try {
    const line = fs
      .readFileSync('/etc/passwd', 'utf8')
      .split('\n')
      .find((l) => l.startsWith(`${user}:`));
    return line ? Number(line.split(':')[3]) : undefined;
  } catch {
    return undefined;
  }
}
