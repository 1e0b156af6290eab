import { keyOf, type Section, type Setting } from './schema.js';
import { AUDIT } from './sections/audit.js';
import { BOXES, NETWORK, REGISTRY } from './sections/boxes.js';
import { BENCHMARKS, LIMITS } from './sections/limits.js';
import { CLUSTER, SERVER } from './sections/server.js';
import { BLUEPRINTS, EVICTIONS, REPOSITORIES, SSH } from './sections/services.js';
import { OBJECTS, STORAGE } from './sections/storage.js';

/** The file's sections in the order the README and `config show` list them. */
export const SECTIONS: readonly Section[] = [
  SERVER,
  CLUSTER,
  STORAGE,
  BOXES,
  NETWORK,
  REGISTRY,
  SSH,
  EVICTIONS,
  OBJECTS,
  BLUEPRINTS,
  REPOSITORIES,
  LIMITS,
  BENCHMARKS,
  AUDIT,
];

/** A setting with the section it lives in. */
export interface PlacedSetting extends Setting {
  section: string;
  /** Its key in the section: the variable less `DEVBOXD_`, lowercased. */
  key: string;
}

/** Every setting, in section order. */
export const SETTINGS: readonly PlacedSetting[] = SECTIONS.flatMap((s) => s.settings.map((x) => ({ ...x, section: s.name, key: keyOf(x.name) })));

/** Settings by variable name. */
export const BY_NAME: ReadonlyMap<string, PlacedSetting> = new Map(SETTINGS.map((s) => [s.name, s]));

/** Settings by key (keys are unique across sections: each is its variable's name). */
export const BY_KEY: ReadonlyMap<string, PlacedSetting> = new Map(SETTINGS.map((s) => [s.key, s]));

/**
 * Variables the code reads that are no setting of a server, so neither the file nor the reference has them:
 * the processes devboxd starts get them from it, and one command takes one as its input.
 */
export const INTERNAL: Readonly<Record<string, string>> = {
  DEVBOXD_CONFIG: 'the config file itself (or `--config FILE`)',
  DEVBOXD_HOST_DATA_DIR: "set by the `all` supervisor for the API server: the API's data dir as the operator sees it",
  DEVBOXD_SQLITE_ADDON: "set for an axon's SQL process: the SQLite addon it loads",
  DEVBOXD_SQL_IDS: "set for an axon's SQL process: the uid and gid it drops to",
  DEVBOXD_NEW_SECRET_KEY: "`secrets rotate-key`'s new master key when no `--new-key-file` gives it",
};
