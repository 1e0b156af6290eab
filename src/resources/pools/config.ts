import os from 'node:os';

/** The pools' settings (the pools module's `config`, parsed once at start). */
export interface PoolConfig {
  /**
   * DEVBOXD_WARM_POOL: boxes of the default image and size kept booted on this node, ready for a create. The
   * default fits a small host: 2 on up to 4 cores, 4 on more. 0 keeps none (unless `devboxd pools set`).
   */
  defaultCount: number;
}

type Int = (name: string, def: number, min: number, max: number) => number;

export const MAX_POOL = 1000;

export function loadPoolConfig(int: Int, cores = os.availableParallelism()): PoolConfig {
  return { defaultCount: int('DEVBOXD_WARM_POOL', cores > 4 ? 4 : 2, 0, MAX_POOL) };
}
