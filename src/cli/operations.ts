import fs from 'node:fs';
import type { Config } from '../config.js';
import { runDrain } from '../resources/evictions/index.js';
import { pruneKeys, rotateKey } from '../resources/secrets/index.js';
import type { WithStore } from './parse.js';
import { fail } from './keys.js';
import { type Command, type Io, UsageError } from './parse.js';

/** The server's own upkeep: the master key, draining, and who sees a blueprint, object or agent. */
export function operationCommands(config: () => Config, io: Io, withStore: WithStore): Command[] {
  return [
    {
      words: ['secrets', 'rotate-key'],
      args: [],
      options: {
        'new-key-file': { type: 'string', placeholder: 'FILE', help: 'the new key: base64 of 32 bytes (else DEVBOXD_NEW_SECRET_KEY, else a fresh one)' },
        prune: { type: 'boolean', help: 'instead: drop retired keys once nothing is sealed under them' },
      },
      summary: `re-encrypt every secret under a new master key (default: a fresh key in <data>/secret.key, or
DEVBOXD_SECRET_KEY when that is set); the old keys stay in the key file, retired, until --prune,
which drops them once nothing is sealed under them (checked under the database's write lock; with
DEVBOXD_SECRET_KEY it checks that DEVBOXD_SECRET_KEY_PREVIOUS can go)`,
      run: async (_args, o) => {
        const c = config();
        const { SEALED } = await import('../resources/index.js');
        const keys = { dataDir: c.dataDir, secretKey: c.secretKey, previousKeys: c.secretKeyPrevious, sealed: SEALED };
        if (o.prune) {
          if (o['new-key-file'] !== undefined)
            throw new UsageError('devboxd secrets rotate-key: --prune takes no --new-key-file', 'usage: devboxd secrets rotate-key --prune');
          return withStore(async (store) => {
            const r = await pruneKeys(store, keys);
            const dropped = r.dropped.length ? r.dropped.join(', ') : 'no key';
            io.out(`re-encrypted ${r.resealed} texts left under retired keys; dropped ${dropped}; current key ${r.keyId}\n`);
            for (const note of r.notes) io.out(`${note}\n`);
            return 0;
          });
        }
        const file = o['new-key-file'] as string | undefined;
        const newKey = file !== undefined ? fs.readFileSync(file, 'utf8').trim() : process.env.DEVBOXD_NEW_SECRET_KEY || undefined;
        return withStore(async (store) => {
          const r = await rotateKey(store, { ...keys, newKey });
          io.out(`re-encrypted ${r.resealed} secrets; every secret is now sealed under key ${r.keyId}\n`);
          for (const note of r.notes) io.out(`${note}\n`);
          return 0;
        });
      },
    },
    {
      words: ['drain'],
      args: [],
      options: { 'grace-seconds': { type: 'string', placeholder: 'N', help: 'notice before each suspend, 0 to 3600 (default DEVBOXD_EVICT_GRACE_SECONDS)' } },
      summary: `suspend every devbox the server on this data dir runs (disks kept, so owners can resume them): each
is announced on the eviction watch stream the grace before its suspend; exits 0 once all are suspended`,
      run: (_args, o) => {
        const raw = o['grace-seconds'] as string | undefined;
        const grace = raw === undefined ? undefined : Number(raw);
        if (grace !== undefined && (!/^\d+$/.test(raw!) || grace > 3600)) {
          throw new UsageError('devboxd drain: --grace-seconds must be an integer between 0 and 3600', 'usage: devboxd drain [--grace-seconds N]');
        }
        return runDrain(config().dataDir, grace, (line) => io.out(`${line}\n`));
      },
    },
    ...(['blueprints', 'objects', 'agents'] as const).flatMap((kind) => publishCommands(kind, io, withStore)),
  ];
}

const PUBLIC_MEANS = {
  blueprints: 'every account lists it (list_public), sees its metadata and may boot devboxes or build on it',
  objects: 'listed by list_public, readable and mountable by every account (only its owner deletes it)',
  agents: "listed by list_public, readable and mountable by every account (an object agent's object must be public too)",
};

function publishCommands(kind: 'blueprints' | 'objects' | 'agents', io: Io, withStore: WithStore): Command[] {
  const one = kind.slice(0, -1);
  const article = kind === 'blueprints' ? 'a' : 'an';
  return [true, false].map((pub) => ({
    words: [kind, pub ? 'publish' : 'unpublish'],
    args: ['ID'],
    summary: pub ? `make ${article} ${one} public: ${PUBLIC_MEANS[kind]}` : 'make it private to its account again',
    run: ({ ID }) =>
      withStore(async (store) => {
        const stores = {
          blueprints: async () => new (await import('../resources/blueprints/index.js')).SqlBlueprintStore(store.db),
          objects: async () => new (await import('../resources/objects/index.js')).SqlObjectStore(store.db),
          agents: async () => new (await import('../resources/agents/index.js')).SqlAgentStore(store.db),
        };
        if (!(await (await stores[kind]()).setPublic(ID!, pub))) return fail(io, `no ${one} ${ID}`);
        io.out(`${one} ${ID} is now ${pub ? 'public' : 'private'}\n`);
        return 0;
      }),
  }));
}
