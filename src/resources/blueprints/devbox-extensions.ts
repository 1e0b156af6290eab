import { ERRORS } from '../../platform/errors.js';
import type { CreateResolver } from '../devboxes/index.js';
import type { LaunchParameters } from '../devboxes/index.js';
import { checkRequired, servicesOf } from './services.js';
import type { SqlBlueprintStore } from './sql-blueprint-store.js';
import type { Blueprint, ImageConfig } from './types.js';

/** Quotes a word for bash. */
const quote = (w: string): string => (/^[A-Za-z0-9_@%+=:,./-]+$/.test(w) ? w : `'${w.replaceAll("'", `'\\''`)}'`);

/**
 * The image's ENTRYPOINT and CMD as the box's entrypoint command (`bash -c`): exec form words are quoted;
 * a shell-form one is its command as written.
 */
export function entrypointOf(image: ImageConfig): string | null {
  const argv = [...(image.entrypoint ?? []), ...(image.cmd ?? [])];
  if (!argv.length) return null;
  const sh = image.shell.join('\u0000');
  const shellForm = (a: string[] | null) => !!a && a.length === image.shell.length + 1 && a.slice(0, -1).join('\u0000') === sh;
  if (shellForm(image.entrypoint)) return image.entrypoint!.at(-1)!;
  if (!image.entrypoint && shellForm(image.cmd)) return image.cmd!.at(-1)!;
  return `exec ${argv.map(quote).join(' ')}`;
}

const REQUIRED = 'launch_parameters.required_services';

/** Services are a blueprint's: a box from no blueprint has none to start. */
function refuseServices(required: unknown): void {
  if (Array.isArray(required) && required.length) {
    throw ERRORS.invalid(`${REQUIRED}: services are defined by a blueprint; create the devbox from one (blueprint_id or blueprint_name)`);
  }
}

/** What a box from the blueprint takes from it unless its request says otherwise. */
function defaultsOf(b: Blueprint) {
  const launch: LaunchParameters = { ...(b.parameters.launch_parameters ?? {}) };
  if (b.image.user && launch.user_parameters === undefined) launch.user_parameters = { username: b.image.user.name, uid: b.image.user.uid };
  return { launchParameters: launch, environment: b.image.env, entrypoint: entrypointOf(b.image), cwd: b.image.workdir };
}

/**
 * A create naming `blueprint_id` or `blueprint_name` boots on the blueprint's layers (no copy per box) with its
 * defaults: launch parameters, the image's ENV, USER, WORKDIR, ENTRYPOINT/CMD. 404 unknown, 400 not built.
 */
export function blueprintResolver(store: () => SqlBlueprintStore): CreateResolver {
  return async (accountId, input) => {
    if (input.snapshotId && (input.blueprintId || input.blueprintName)) throw ERRORS.invalid('give snapshot_id or a blueprint, not both');
    const required = input.launchParameters?.required_services;
    if (input.snapshotId) {
      // A box from a snapshot of a blueprint's box keeps the blueprint's defaults (its layers are the snapshot's).
      const b = await store().blueprintOfSnapshot(accountId, input.snapshotId);
      if (b) checkRequired(servicesOf(b), required ?? b.parameters.launch_parameters?.required_services, REQUIRED);
      else refuseServices(required);
      return b ? { defaults: defaultsOf(b) } : undefined;
    }
    if (!input.blueprintId && !input.blueprintName) {
      refuseServices(required);
      return undefined;
    }
    if (input.blueprintId && input.blueprintName) throw ERRORS.invalid('give blueprint_id or blueprint_name, not both');
    const b = input.blueprintId ? await store().get(accountId, input.blueprintId) : await store().latestBuilt(accountId, input.blueprintName!);
    if (!b) throw ERRORS.notFound('blueprint', (input.blueprintId ?? input.blueprintName)!);
    if (b.status !== 'build_complete') throw ERRORS.invalid(`blueprint ${b.id} is ${b.status}, not build_complete`);
    checkRequired(servicesOf(b), required ?? b.parameters.launch_parameters?.required_services, REQUIRED);
    return { layers: b.layers, blueprintId: b.id, defaults: defaultsOf(b) };
  };
}
