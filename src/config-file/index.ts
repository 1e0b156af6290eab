/**
 * The config file (`--config FILE`, DEVBOXD_CONFIG): YAML grouped by section, each key a variable less its
 * `DEVBOXD_` prefix. It becomes variables under the environment's own; the parsers stay the settings'.
 */
export { configCommands } from './commands.js';
export { environmentWith, settingsEnvironment } from './environment.js';
export { CONFIG_OPTION, configPath } from './option.js';
export { readConfigFile } from './load.js';
export { effective, masked } from './show.js';
export { renderReference, withReference } from './reference.js';
export { BY_NAME, INTERNAL, SECTIONS, SETTINGS } from './settings.js';
