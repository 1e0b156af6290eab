import type { CommandContext } from '../../host.js';
import type { ModuleCommand } from '../../platform/module/index.js';
import { UsageError } from '../../platform/module/index.js';
import { DEFAULT_SIZE, isPooled, SIZES } from '../devboxes/index.js';
import { MAX_POOL } from './config.js';
import { SqlPoolStore } from './sql-pool-store.js';

const SET_USAGE = 'usage: devboxd pools set SIZE COUNT';

/**
 * `devboxd pools`: what the warm pools keep per size (set here, in the database every server reads within a
 * few seconds), and what each node has ready now.
 */
export const POOL_COMMANDS: readonly ModuleCommand<CommandContext>[] = [
  {
    words: ['pools', 'list'],
    args: [],
    options: { json: { type: 'boolean', help: 'print JSON ({"settings": [...], "ready": [...]})' } },
    summary: `the warm pools: each size's count as set (a size not set: ${DEFAULT_SIZE} keeps each server's
DEVBOXD_WARM_POOL, others none), and the pooled boxes each node has ready (and booting) now`,
    run: ({ io, withStore }, _args, o) =>
      withStore(async (store) => {
        const settings = await new SqlPoolStore(store.db).list();
        const ready = new Map<string, { ids: string[]; booting: number }>();
        for (const d of await store.devboxes.listByStatus(['provisioning', 'initializing', 'running'])) {
          if (!isPooled(d)) continue;
          const key = `${d.node}\t${String(d.launchParameters.resource_size_request ?? DEFAULT_SIZE)}`;
          const r = ready.get(key) ?? { ids: [], booting: 0 };
          if (d.status === 'running') r.ids.push(d.id);
          else r.booting++;
          ready.set(key, r);
        }
        const rows = [...ready].map(([k, r]) => ({
          node: k.split('\t')[0]!,
          size: k.split('\t')[1]!,
          ready: r.ids.length,
          booting: r.booting,
          devbox_ids: r.ids,
        }));
        if (o.json) {
          const json = { settings: settings.map((s) => ({ size: s.size, count: s.count, update_time_ms: s.updateTimeMs })), ready: rows };
          io.out(`${JSON.stringify(json, null, 2)}\n`);
          return 0;
        }
        io.out(`SIZE\tCOUNT\n${settings.map((s) => `${s.size}\t${s.count}\n`).join('')}`);
        if (!settings.some((s) => s.size === DEFAULT_SIZE)) io.out(`${DEFAULT_SIZE}\t(DEVBOXD_WARM_POOL of each server)\n`);
        io.out(`\nNODE\tSIZE\tREADY\tBOOTING\n${rows.map((r) => `${r.node}\t${r.size}\t${r.ready}\t${r.booting}\n`).join('')}`);
        return 0;
      }),
  },
  {
    words: ['pools', 'set'],
    args: ['SIZE', 'COUNT'],
    summary: `keep COUNT (0 to ${MAX_POOL}) boxes of SIZE (${Object.keys(SIZES).join(', ')}) of the default image ready on every
node; 0 keeps none (also of ${DEFAULT_SIZE}, whatever DEVBOXD_WARM_POOL says)`,
    run: ({ io, withStore }, { SIZE, COUNT }) => {
      if (!Object.hasOwn(SIZES, SIZE!))
        throw new UsageError(`devboxd pools set: SIZE must be one of ${Object.keys(SIZES).join(', ')}, got "${SIZE}"`, SET_USAGE);
      if (!/^\d+$/.test(COUNT!) || Number(COUNT) > MAX_POOL)
        throw new UsageError(`devboxd pools set: COUNT must be an integer between 0 and ${MAX_POOL}, got "${COUNT}"`, SET_USAGE);
      return withStore(async (store) => {
        await new SqlPoolStore(store.db).set(SIZE!, Number(COUNT));
        io.out(`warm pool ${SIZE}: ${COUNT} per node (servers pick it up within 2 s)\n`);
        return 0;
      });
    },
  },
  {
    words: ['pools', 'clear'],
    args: [],
    summary: `forget every size's count set by devboxd pools set: ${DEFAULT_SIZE} keeps DEVBOXD_WARM_POOL again, other sizes none`,
    run: ({ io, withStore }) =>
      withStore(async (store) => {
        const n = await new SqlPoolStore(store.db).clear();
        io.out(`cleared ${n} warm pool setting${n === 1 ? '' : 's'}\n`);
        return 0;
      }),
  },
];
