import fs from 'node:fs';
import type { CommandContext } from '../../host.js';
import type { ModuleCommand } from '../../platform/module/index.js';
import { UsageError } from '../../platform/module/index.js';
import { pruneKeys, rotateKey } from './rotate-key.js';

/** `devboxd secrets rotate-key`: the master key, rotated and pruned over every module's sealed texts. */
export const SECRET_COMMANDS: readonly ModuleCommand<CommandContext>[] = [
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
    run: async ({ config: c, io, withStore, sealed }, _args, o) => {
      const keys = { dataDir: c.dataDir, secretKey: c.secretKey, previousKeys: c.secretKeyPrevious, sealed };
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
      const newKey = file !== undefined ? fs.readFileSync(file, 'utf8').trim() : c.env.DEVBOXD_NEW_SECRET_KEY || undefined;
      return withStore(async (store) => {
        const r = await rotateKey(store, { ...keys, newKey });
        io.out(`re-encrypted ${r.resealed} secrets; every secret is now sealed under key ${r.keyId}\n`);
        for (const note of r.notes) io.out(`${note}\n`);
        return 0;
      });
    },
  },
];
