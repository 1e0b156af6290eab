/**
 * A setting that does not parse: the server refuses to start and names the variable. Here, below config.ts,
 * so the loaders config.ts calls (the platform's, the resources', network and ssh) can throw it without
 * importing config.ts back (an import cycle).
 */
export class ConfigError extends Error {}
