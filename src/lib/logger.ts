import pino from 'pino';

export type Logger = pino.Logger;

/** JSON logs to stdout; every component gets a `child` scoped with its name. */
export function createLogger(level: string): Logger {
  return pino({ level, base: { service: 'devboxd' } });
}
