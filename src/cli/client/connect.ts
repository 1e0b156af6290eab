import type Runloop from '@runloop/api-client';
import type { Command, Io } from '../parse.js';
import { UsageError } from '../parse.js';

/** The options every client command takes: where the server is, the key, and JSON out. */
export const CLIENT_OPTIONS: NonNullable<Command['options']> = {
  'base-url': { type: 'string', placeholder: 'URL', help: 'the server (default RUNLOOP_BASE_URL, else http://127.0.0.1:$DEVBOXD_PORT or :4000)' },
  'api-key': { type: 'string', placeholder: 'KEY', help: 'an API key (default RUNLOOP_API_KEY); prefer the variable: a flag shows in ps' },
  json: { type: 'boolean', help: 'print the API answer as JSON, for scripts' },
};

export type Options = Record<string, string | boolean | undefined>;

/**
 * An SDK client for a command line: the official SDK, so the CLI talks to devboxd (or Runloop) as any user's
 * code does, with its retries. The key comes from the flag or RUNLOOP_API_KEY; without one the command stops
 * with a usage error naming both.
 */
export async function clientOf(o: Options, usage: string): Promise<Runloop> {
  const apiKey = (o['api-key'] as string | undefined) ?? process.env.RUNLOOP_API_KEY;
  if (!apiKey) throw new UsageError('devboxd: no API key: set RUNLOOP_API_KEY (or pass --api-key)', usage);
  const baseURL = (o['base-url'] as string | undefined) ?? process.env.RUNLOOP_BASE_URL ?? `http://127.0.0.1:${process.env.DEVBOXD_PORT || 4000}`;
  // Loaded here: the admin commands and `serve` never load the SDK.
  const { default: Runloop } = await import('@runloop/api-client');
  return new Runloop({ bearerToken: apiKey, baseURL });
}

/** Prints `value` as JSON with --json, else the lines `text` makes of it. */
export function show<T>(io: Io, o: Options, value: T, text: (v: T) => string): void {
  io.out(o.json ? `${JSON.stringify(value, null, 2)}\n` : text(value));
}

/** Rows as tab-separated lines under a header (what `cut`, `column -t` and `awk` read). */
export function table(head: string[], rows: string[][]): string {
  return [head, ...rows].map((r) => `${r.join('\t')}\n`).join('');
}

export const iso = (ms: number | null | undefined): string => (ms ? new Date(ms).toISOString() : '-');
