/** Chooses the runtime driver at boot. The local Linux driver is the shipped one. */
import type { RuntimeDriver } from './driver.js';
import { LinuxDriver } from './linux/driver.js';
import type { EgressConfig } from './linux/egress.js';
import type { RegistryConfig } from './linux/driver.js';
import type { RuntimeLogger } from './linux/logger.js';

export type { RuntimeLogger } from './linux/logger.js';
export type { EgressConfig } from './linux/egress.js';

export interface RuntimeOptions {
  /** Per-box state (`boxes/<id>`) and snapshot layers (`layers/<id>`) live here. */
  dataDir: string;
  /** Where the cached base image is built and kept. */
  imageDir: string;
  logger: RuntimeLogger;
  /** Commands one box runs at once (the box refuses more); see LinuxDriverOptions. */
  maxCommandsPerBox?: number;
  /** Commands all boxes run at once. */
  maxCommands?: number;
  /** Every box gets a network link under these bounds; absent, boxes have only a loopback. */
  egress?: EgressConfig;
  /** Where images are pulled from, and the bounds of their layers. */
  registry?: RegistryConfig;
}

export function createRuntime(opts: RuntimeOptions): RuntimeDriver {
  return new LinuxDriver(opts);
}
