/** Axon settings (part of Config, parsed once at start): what one account's axons may hold. */
export interface AxonConfig {
  /** DEVBOXD_AXON_ACCOUNT_MAX: most axons (not deleted) one account holds; a create past it gets 403. */
  accountMax: number;
  /** DEVBOXD_AXON_EVENT_BYTES: payload bytes kept per axon; a publish past it drops the oldest events. */
  eventBytes: number;
  /** DEVBOXD_AXON_ACCOUNT_EVENT_BYTES: payload bytes kept across an account's axons; a publish past it gets 403. */
  accountEventBytes: number;
  /** DEVBOXD_AXON_STREAM_STALL_SECONDS: how long an SSE stream may wait on a client that does not read before it is cut off. */
  streamStallSeconds: number;
}

const MiB = 1024 * 1024;

export function loadAxonConfig(int: (name: string, def: number, min: number, max: number) => number): AxonConfig {
  return {
    accountMax: int('DEVBOXD_AXON_ACCOUNT_MAX', 1000, 1, 10_000_000),
    eventBytes: int('DEVBOXD_AXON_EVENT_BYTES', 64 * MiB, 1, 2 ** 40),
    accountEventBytes: int('DEVBOXD_AXON_ACCOUNT_EVENT_BYTES', 1024 * MiB, 1, 2 ** 50),
    streamStallSeconds: int('DEVBOXD_AXON_STREAM_STALL_SECONDS', 30, 1, 3600),
  };
}
