/** Scenario settings (part of Config, parsed once at start). */
export interface ScenarioConfig {
  /** DEVBOXD_SCENARIO_ACCOUNT_MAX_SCENARIOS: most scenarios (archived included) an account holds; a create past it gets 403. */
  accountMaxScenarios: number;
  /** DEVBOXD_SCENARIO_ACCOUNT_MAX_SCORERS: most custom scorers an account holds; a create past it gets 403. */
  accountMaxScorers: number;
}

export function loadScenarioConfig(int: (name: string, def: number, min: number, max: number) => number): ScenarioConfig {
  return {
    accountMaxScenarios: int('DEVBOXD_SCENARIO_ACCOUNT_MAX_SCENARIOS', 10_000, 1, 100_000_000),
    accountMaxScorers: int('DEVBOXD_SCENARIO_ACCOUNT_MAX_SCORERS', 1_000, 1, 1_000_000),
  };
}
