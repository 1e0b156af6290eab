import type { Logger } from '../../lib/logger.js';
import { ERRORS } from '../../platform/errors.js';
import type { Store } from '../../platform/store/types.js';
import type { CreateResolver, EnvironmentProvider, StopListener, ViewEnricher } from '../devboxes/index.js';
import { TERMINAL } from '../devboxes/index.js';
import type { McpTokens } from './mcp-tokens.js';

/**
 * What the MCP module contributes to devboxes: `mcp` at create (resolved before the box exists, bindings and
 * tokens written in the transaction that inserts it), the hub's URL and tokens in the box's environment,
 * `mcp_specs` in the view, and on stop: upstream connections closed, tokens removed once the box has ended.
 */
export function mcpDevboxExtensions(deps: {
  store: Store;
  tokens: McpTokens;
  /** The hub's upstream clients (closed with their box). */
  upstreams: { closeBox(devboxId: string): void };
  /** RL_MCP_URL as the box sees it. */
  hubUrl: string;
  log: Logger;
}): { resolver: CreateResolver; environment: EnvironmentProvider; enricher: ViewEnricher; onStopped: StopListener } {
  const { store, tokens, upstreams, hubUrl, log } = deps;
  return {
    resolver: async (accountId, input) => {
      if (!input.mcp || !Object.keys(input.mcp).length) return undefined;
      // One value per variable: a key the request sets otherwise, or the hub's own variables, is a 400.
      const taken = new Map<string, string>();
      for (const name of Object.keys(input.secrets ?? {})) taken.set(name, 'secrets');
      for (const name of Object.keys(input.environmentVariables ?? {})) taken.set(name, 'environment_variables');
      for (const name of [...Object.keys(input.mcp), 'RL_MCP_URL', 'RL_MCP_TOKEN']) {
        const other = taken.get(name);
        if (other) throw ERRORS.invalid(`mcp: the variable ${name} is also set by ${other}`);
      }
      const specs = await tokens.resolveSpecs(accountId, input.mcp);
      return { persist: (tx, devbox) => tokens.persist(tx, devbox, specs), viewPart: 'mcp' };
    },
    environment: (devbox) => tokens.environment(devbox, hubUrl),
    // Bindings are made at create only (the resolver's persist).
    enricher: { part: 'mcp', none: { mcp_specs: null }, enrich: async (devbox) => ({ mcp_specs: await tokens.specs(devbox.id) }) },
    onStopped: (devboxId) => {
      upstreams.closeBox(devboxId);
      void (async () => {
        const d = await store.devboxes.getById(devboxId);
        if (!d || TERMINAL.has(d.status)) await tokens.endBox(devboxId);
      })().catch((err) => log.error({ err, devbox: devboxId }, 'removing MCP hub tokens failed'));
    },
  };
}
