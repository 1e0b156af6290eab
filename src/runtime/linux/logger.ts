/** The logging the runtime needs; pino's Logger satisfies it. */
export interface RuntimeLogger {
  info(obj: object | string, msg?: string): void;
  warn(obj: object | string, msg?: string): void;
  error(obj: object | string, msg?: string): void;
}
