import { runCli } from '../../src/cli/index.js';

/**
 * The operator CLI in this process on a data dir (commands read DEVBOXD_DATA_DIR as they start): its exit code
 * and what it wrote. A process per command costs a second or more of the fast tier.
 */
export async function cliOn(dataDir: string, ...args: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const was = process.env.DEVBOXD_DATA_DIR;
  process.env.DEVBOXD_DATA_DIR = dataDir;
  try {
    const code = await runCli(args, { out: (s) => (out += s), err: (s) => (err += s) });
    return { code, out, err };
  } finally {
    if (was === undefined) delete process.env.DEVBOXD_DATA_DIR;
    else process.env.DEVBOXD_DATA_DIR = was;
  }
}
