import { intSetting } from '../../platform/config-error.js';
import type { Env } from '../../platform/module/index.js';

const MiB = 1024 * 1024;

/** Execution output: what is kept per stream and per box, and for how long. Parsed by the module from the environment (its `config`). */
export interface ExecutionConfig {
  /** DEVBOXD_EXECUTION_OUTPUT_MAX_BYTES: output kept per stream of one execution (its first eighth and the most recent bytes). */
  executionOutputMaxBytes: number;
  /** DEVBOXD_EXECUTION_OUTPUT_BOX_MAX_BYTES: output kept for all executions of one box; finished ones' output goes oldest first past it. */
  executionOutputBoxMaxBytes: number;
  /** DEVBOXD_EXECUTION_OUTPUT_RETENTION: seconds execution output outlives its box (0: removed as the box ends). */
  executionOutputRetentionSeconds: number;
}

export function loadExecutionConfig(env: Env): ExecutionConfig {
  const outputMax = intSetting('DEVBOXD_EXECUTION_OUTPUT_MAX_BYTES', env.DEVBOXD_EXECUTION_OUTPUT_MAX_BYTES, 64 * MiB, 64 * 1024, 2 ** 40);
  return {
    executionOutputMaxBytes: outputMax,
    executionOutputBoxMaxBytes: intSetting(
      'DEVBOXD_EXECUTION_OUTPUT_BOX_MAX_BYTES',
      env.DEVBOXD_EXECUTION_OUTPUT_BOX_MAX_BYTES,
      Math.max(4 * outputMax, 256 * MiB),
      outputMax,
      2 ** 50,
    ),
    executionOutputRetentionSeconds: intSetting('DEVBOXD_EXECUTION_OUTPUT_RETENTION', env.DEVBOXD_EXECUTION_OUTPUT_RETENTION, 0, 0, 7 * 24 * 3600),
  };
}
