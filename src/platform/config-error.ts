import os from 'node:os';

/**
 * A setting that does not parse: the server refuses to start and names the variable. Here, below config.ts,
 * so the loaders config.ts calls (the platform's, the resources', network and ssh) can throw it without
 * importing config.ts back (an import cycle).
 */
export class ConfigError extends Error {}

const UNITS: Record<string, number> = { '': 1, K: 1024, M: 1024 ** 2, G: 1024 ** 3, T: 1024 ** 4 };

/** `1073741824`, `512M`, `2G`, `2GiB` or `10%` (of `totalBytes`, the host's memory) to bytes; undefined when it is none of them. */
export function parseSize(raw: string, totalBytes = os.totalmem()): number | undefined {
  const pct = /^(\d+(?:\.\d+)?)%$/.exec(raw);
  if (pct) return Number(pct[1]) <= 100 ? Math.floor((Number(pct[1]) / 100) * totalBytes) : undefined;
  const m = /^(\d+)\s*([KMGT]?)(?:i?B)?$/i.exec(raw);
  return m ? Number(m[1]) * UNITS[m[2]!.toUpperCase()]! : undefined;
}

/** Reads an integer setting: unset or empty is the default; anything but an integer in [min, max] is refused. */
export function intSetting(name: string, raw: string | undefined, def: number, min: number, max: number): number {
  if (raw === undefined || raw === '') return def;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new ConfigError(`${name} must be an integer between ${min} and ${max}, got "${raw}"`);
  }
  return n;
}

/** `intSetting` over one environment, in the shape the settings loaders take. */
export function intsOf(env: Readonly<Record<string, string | undefined>>): (name: string, def: number, min: number, max: number) => number {
  return (name, def, min, max) => intSetting(name, env[name], def, min, max);
}
