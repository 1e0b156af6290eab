/** Benchmark settings (part of Config, parsed once at start). */
export interface BenchmarkConfig {
  /** DEVBOXD_BENCHMARK_CONCURRENCY: scenario runs (devboxes) one benchmark run keeps open at once; the next start as they end. */
  concurrency: number;
  /** DEVBOXD_BENCHMARK_ACCOUNT_MAX_BENCHMARKS: most benchmarks an account holds; a create past it gets 403. */
  accountMaxBenchmarks: number;
  /** DEVBOXD_BENCHMARK_ACCOUNT_MAX_RUNNING: most benchmark runs of an account running at once; a start past it gets 409. */
  accountMaxRunning: number;
  /**
   * DEVBOXD_BENCHMARK_LEASE_SEC: how long a running run stays its server's without a renewal (renewed every
   * third of it); past it, any server takes the run over and drives it to its end.
   */
  leaseSec: number;
}

export function loadBenchmarkConfig(int: (name: string, def: number, min: number, max: number) => number): BenchmarkConfig {
  return {
    concurrency: int('DEVBOXD_BENCHMARK_CONCURRENCY', 8, 1, 1000),
    accountMaxBenchmarks: int('DEVBOXD_BENCHMARK_ACCOUNT_MAX_BENCHMARKS', 10_000, 1, 100_000_000),
    accountMaxRunning: int('DEVBOXD_BENCHMARK_ACCOUNT_MAX_RUNNING', 4, 1, 10_000),
    leaseSec: int('DEVBOXD_BENCHMARK_LEASE_SEC', 60, 1, 3600),
  };
}
