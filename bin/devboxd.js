#!/usr/bin/env node
// The devboxd command. TypeScript sources run through tsx's loader, so there is no build step to forget.
import { register } from 'tsx/esm/api';

register();
const { runCli } = await import('../src/cli.ts');
try {
  const code = await runCli(process.argv.slice(2));
  if (code >= 0) process.exit(code);
} catch (err) {
  process.stderr.write(`devboxd: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
}
