/** `devboxd backup DEST` and `devboxd restore SRC`: the operator's side of backup.ts and restore.ts. */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Config } from '../../config.js';
import type { CommandContext } from '../../host.js';
import { INSTALL_ROOT } from '../../lib/install-root.js';
import type { ModuleCommand } from '../../platform/module/index.js';
import { CORE_SCHEMA } from '../../resources/core-schema.js';
import { openStore } from '../../resources/core-store.js';
import { MODULE_SCHEMAS } from '../../resources/index.js';
import { backup, mib } from './backup.js';
import type { Manifest } from './manifest.js';
import { restore } from './restore.js';

const VERSION = (JSON.parse(readFileSync(path.join(INSTALL_ROOT, 'package.json'), 'utf8')) as { version: string }).version;

/**
 * The commands, given the server's own settings: under DEVBOXD_ROLE=all they need the whole data dir (the
 * node's layers beside the API server's `<data>/api`, where the other operator commands act).
 */
export function backupCommands(serverConfig: () => Config): ModuleCommand<CommandContext>[] {
  return [
    {
      words: ['backup'],
      args: ['DEST'],
      options: { 'with-master-key': { type: 'boolean', help: 'put the master key in the backup too (else restore needs it from you)' } },
      summary: `write a backup of this server's data to the new directory DEST while it runs: the database at one
instant, blobs, layers, axons' databases (see the README, "Backup and restore"); never the master key
unless --with-master-key`,
      run: async ({ io, sealed }, args, o) => {
        const started = Date.now();
        const m = await backup(serverConfig(), {
          dest: args.DEST!,
          withMasterKey: o['with-master-key'] === true,
          sealed,
          version: VERSION,
          say: (line) => io.out(`${line}\n`),
        });
        for (const line of summary(m, path.resolve(args.DEST!), (Date.now() - started) / 1000)) io.out(`${line}\n`);
        return 0;
      },
    },
    {
      words: ['restore'],
      args: ['SRC'],
      options: {
        'key-file': { type: 'string', placeholder: 'FILE', help: 'the master key file of the backed-up server (its <data>/api/secret.key)' },
        'ignore-master-key': { type: 'boolean', help: 'restore although the sealed values (secrets, tokens) will not open' },
      },
      summary: `restore the backup SRC into an empty DEVBOXD_DATA_DIR (and an empty DEVBOXD_DATABASE_URL database
for a PostgreSQL backup); the master key comes from DEVBOXD_SECRET_KEY, --key-file or the backup`,
      run: async ({ io }, args, o) => {
        const c = serverConfig();
        const known = Object.fromEntries([CORE_SCHEMA, ...MODULE_SCHEMAS].map((s) => [s.module, s.steps.length]));
        const m = await restore(c, {
          src: args.SRC!,
          keyFile: o['key-file'] as string | undefined,
          ignoreMasterKey: o['ignore-master-key'] === true,
          known,
          openStore: (dataDir, databaseUrl) => openStore({ dataDir, databaseUrl, modules: MODULE_SCHEMAS }),
          say: (line) => io.out(`${line}\n`),
        });
        io.out(`restored the backup of ${m.createdAt} (devboxd ${m.devboxd}, node ${m.node}) into ${c.dataDir}: start the server on it\n`);
        return 0;
      },
    },
  ];
}

function summary(m: Manifest, dest: string, seconds: number): string[] {
  const bytes = m.entries.reduce((n, e) => n + e.bytes, 0);
  const count = (kind: string, prefix: string) => m.entries.filter((e) => e.kind === kind && e.path.startsWith(prefix)).length;
  const parts = [
    m.database && `database (${m.database.kind})`,
    `${m.layers.length} layers (${mib(m.entries.filter((e) => e.path.startsWith('layers/')).reduce((n, e) => n + e.bytes, 0))})`,
    m.blobs?.backend === 'fs' && `${m.blobs.files} blobs (${mib(m.blobs.bytes)})`,
    count('sqlite', 'api/axons/') && `${count('sqlite', 'api/axons/')} axon databases`,
  ].filter(Boolean);
  const lines = [`backup written to ${dest} in ${seconds.toFixed(1)} s: ${parts.join(', ')}; ${mib(bytes)} (${mib(bytes / Math.max(seconds, 0.001))}/s)`];
  if (m.blobs?.backend === 's3') lines.push(`blobs: in the bucket ${m.blobs.bucket} (prefix "${m.blobs.prefix}"), not in the backup: ${m.blobs.note}`);
  const sealed = m.masterKey.keys.filter((k) => k.sealed > 0);
  if (m.masterKey.included) lines.push('master key: IN the backup (--with-master-key): keep the backup as secret as the key');
  else if (m.database && !m.masterKey.keys.length)
    lines.push("master key: unknown here (no DEVBOXD_SECRET_KEY, no key file): run backup with the server's settings so restore can check the key");
  else if (sealed.length) lines.push(`master key: not in the backup; restore needs ${sealed.map((k) => `key ${k.id} (${k.sealed} sealed values)`).join(', ')}`);
  if (m.vanished.length) lines.push(`deleted while the backup ran, so not in it (a record copied before may still name them): ${m.vanished.join(', ')}`);
  return lines;
}
