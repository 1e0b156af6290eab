import type { Module } from '../../host.js';
import { intsOf } from '../../platform/config-error.js';
import { visibilityCommands } from '../../platform/module/index.js';
import { devboxesModule } from '../devboxes/index.js';
import { objectsModule, placeObject } from '../objects/index.js';
import { AgentService } from './agent-service.js';
import { type AgentConfig, loadAgentConfig } from './config.js';
import { agentMountExtensions } from './devbox-extensions.js';
import { agentRoutes } from './routes/index.js';
import { AGENTS_SCHEMA } from './schema.js';
import { SqlAgentStore } from './sql-agent-store.js';

declare module '../../platform/module/contract.js' {
  interface Services {
    /** Agents: records; their installs into boxes run as a devbox boot step. */
    agents: AgentService;
  }
}

/** Agents (npm, pip, git or object sources) and their installs into boxes at boot. */
export const agentsModule: Module<AgentConfig> = {
  name: 'agents',
  needs: [devboxesModule, objectsModule],
  config: (env) => loadAgentConfig(intsOf(env)),
  schema: AGENTS_SCHEMA,
  build({ host, config, use }) {
    const objects = use('objects');
    const objectConfig = use('objectConfig');
    const agents = new AgentService(host.store, objects, config);
    // An object agent is placed the way object mounts are, reading the object as the agent's owner.
    const mounts = agentMountExtensions(
      () => agents,
      (ctx, owner, objectId, objectPath, deadline) => placeObject(objects, objectConfig, ctx.sandbox, owner, objectId, objectPath, deadline),
      config,
    );
    use('devboxExtensions').resolver(mounts.resolver);
    use('devboxExtensions').bootStep(mounts.bootStep, 'mounts');
    return { agents };
  },
  routes: (app, s) => app.register(agentRoutes, { agents: s.agents }),
  commands: visibilityCommands({
    plural: 'agents',
    one: 'agent',
    article: 'an',
    means: "listed by list_public, readable and mountable by every account (an object agent's object must be public too)",
    setPublic: (store, id, pub) => new SqlAgentStore(store.db).setPublic(id, pub),
  }),
};
