export type { AnyModule, BuildContext, CommandOption, ModuleCommand, Env, Phase, ResourceModule, ServiceName, Services } from './contract.js';
export { PHASES, UsageError } from './contract.js';
export { type Composition, compose, moduleConfigs, moduleOrder } from './compose.js';
export { type Publishable, type VisibilityContext, visibilityCommands } from './visibility.js';
