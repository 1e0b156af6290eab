/**
 * What the CLI needs of the config file before a command runs, kept apart from the YAML reader so commands
 * that read no file (the client commands, `serve` without one) do not load it.
 */

/** `--config FILE`, which every command but the client ones takes. */
export const CONFIG_OPTION = {
  type: 'string',
  placeholder: 'FILE',
  help: 'settings from this YAML file (default DEVBOXD_CONFIG, else none); variables that are set override it',
} as const;

/** The file to read: `--config FILE`, else DEVBOXD_CONFIG, else none (no file is looked for anywhere else). */
export function configPath(option: string | undefined, env: Readonly<Record<string, string | undefined>>): string | undefined {
  return option || env.DEVBOXD_CONFIG || undefined;
}
