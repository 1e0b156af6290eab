export type { AnyModule, BuildContext, Env, Phase, ResourceModule, ServiceName, Services } from './contract.js';
export { PHASES } from './contract.js';
export { type Composition, compose, moduleConfigs, moduleOrder } from './compose.js';
