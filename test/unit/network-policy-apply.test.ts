/**
 * How a box's rules follow its policy when a boot and updates race (network-policies/devbox-extensions.ts),
 * with a stand-in store and runtime: the rules in force are observed through `allowsService` (the MCP hub).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createLogger } from '../../src/lib/logger.js';
import type { NetworkConfig } from '../../src/network-config.js';
import type { BootContext } from '../../src/resources/devboxes/extensions.js';
import { networkPolicyExtensions } from '../../src/resources/network-policies/devbox-extensions.js';
import type { NetworkPolicy } from '../../src/resources/network-policies/types.js';
import type { RuntimeDriver } from '../../src/runtime/driver.js';

const egress = (mcp: boolean) => ({
  allowAll: false,
  allowedHostnames: [],
  allowedCidrs: [],
  allowDevboxToDevbox: false,
  allowAgentGateway: true,
  allowMcpGateway: mcp,
  allowRunloopMirrors: false,
});
const policy = (mcp: boolean) => ({ egress: egress(mcp) }) as unknown as NetworkPolicy;
const config = { defaultEgress: 'deny', mirrors: [] } as unknown as NetworkConfig;

function setup(runtime: Partial<RuntimeDriver>) {
  let stored = policy(false);
  let readGate: Promise<void> | null = null;
  const store = {
    async policyOf() {
      const seen = stored;
      if (readGate) await readGate;
      return seen;
    },
  };
  const ext = networkPolicyExtensions({
    policies: () => undefined as never,
    store: store as never,
    runtime: { network: async () => null, ...runtime } as RuntimeDriver,
    config,
    log: createLogger('silent'),
  });
  return {
    ext,
    store: (p: NetworkPolicy) => (stored = p),
    holdReads: (gate: Promise<void> | null) => (readGate = gate),
    boot: (id: string) => ext.bootStep.run({ devbox: { id } } as unknown as BootContext),
  };
}

describe('a policy update racing a boot', () => {
  test('an update committed while the boot read the old policy still ends in force', async () => {
    const s = setup({});
    let open!: () => void;
    s.holdReads(new Promise((r) => (open = r)));
    const booting = s.boot('dbx_1'); // reads the old policy, then waits
    await new Promise((r) => setImmediate(r));
    s.holdReads(null);
    const next = policy(true);
    s.store(next);
    const updating = s.ext.changed(next, ['dbx_1']); // before: skipped, the box was not in force yet
    open();
    await Promise.all([booting, updating]);
    assert.equal(s.ext.allowsService('dbx_1', '/mcp'), true, 'the box has the updated policy');
  });

  test('an update whose rules could not be set is an error, not a silent success', async () => {
    const s = setup({
      network: async () => ({ hostAddress: '127.0.0.95', boxAddress: '127.0.0.96' }),
      setEgress: async () => {
        throw new Error('nftsetd: gone');
      },
    });
    await assert.rejects(s.boot('dbx_2'), /nftsetd: gone/);
    await assert.rejects(s.ext.changed(policy(true), ['dbx_2']), /did not take the new rules.*nftsetd: gone/);
  });
});

describe('box services', () => {
  test('a box whose policy is not in force reaches neither the hub nor the gateway (only /_whoami)', async () => {
    const s = setup({});
    // Before: the no-policy fallback, which allows both.
    assert.equal(s.ext.allowsService('dbx_unknown', '/mcp'), false);
    assert.equal(s.ext.allowsService('dbx_unknown', '/v1'), false);
    assert.equal(s.ext.allowsService('dbx_unknown', '/_whoami'), true);
    await s.boot('dbx_known');
    assert.equal(s.ext.allowsService('dbx_known', '/v1'), true, 'once booted, its policy decides');
  });
});
