import type { BuildParameters } from './types.js';

/** The image a blueprint without a Dockerfile starts from (devboxd's default image). */
export const DEFAULT_FROM = 'runloop:runloop/starter-x86_64';

/** A base image name that means devboxd's default image (Runloop's starter images map to it). */
export const isDefaultImage = (ref: string): boolean => /^runloop[:/]/.test(ref) || ref === 'devboxd' || ref === 'devboxd:default';

/**
 * The Dockerfile a request builds: its own (or `FROM` the default image), with a base blueprint as the
 * FROM, then its file mounts (as comments: they are written by the builder), its setup commands as RUN, then
 * its code mounts (as comments).
 */
export function dockerfileOf(params: BuildParameters, baseBlueprintId: string | null): string {
  let text = params.dockerfile?.trim() ? params.dockerfile.replace(/\s+$/, '') : `FROM ${DEFAULT_FROM}`;
  if (baseBlueprintId) {
    text = /^\s*FROM\s/im.test(text) ? text.replace(/^(\s*)FROM\s+.*$/im, `$1FROM ${baseBlueprintId}`) : `FROM ${baseBlueprintId}\n${text}`;
  }
  const extra: string[] = [];
  for (const path of Object.keys(params.file_mounts ?? {})) extra.push(`# file_mount: ${path}`);
  for (const cmd of params.system_setup_commands ?? []) extra.push(`RUN ${cmd.replace(/\n/g, ' \\\n    ')}`);
  // Code mounts are steps of the builder's (a clone through the git relay, then the install command).
  for (const m of params.code_mounts ?? []) {
    extra.push(`# code_mount: ${m.repo_owner}/${m.repo_name}${m.git_ref ? ` at ${m.git_ref}` : ''} into ~/${m.repo_name}`);
    if (m.install_command) extra.push(`#   then in it: ${m.install_command.replace(/\n/g, '\n#   ')}`);
  }
  return extra.length ? `${text}\n${extra.join('\n')}\n` : `${text}\n`;
}

/** The Dockerfile part the engine parses (the file mounts, setup commands and code mounts are steps of their own). */
export function dockerfileToBuild(params: BuildParameters, baseBlueprintId: string | null): string {
  return dockerfileOf({ ...params, file_mounts: null, system_setup_commands: null, code_mounts: null }, baseBlueprintId);
}
