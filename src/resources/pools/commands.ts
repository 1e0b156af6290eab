import type { CommandContext } from '../../host.js';
import type { ModuleCommand } from '../../platform/module/index.js';
import { UsageError } from '../../platform/module/index.js';
import type { Store } from '../../platform/store/types.js';
import { SqlBlueprintStore } from '../blueprints/index.js';
import { DEFAULT_SIZE, isPooled, SIZES } from '../devboxes/index.js';
import { MAX_POOL } from './config.js';
import { SqlPoolStore } from './sql-pool-store.js';
import { poolName } from './warm-pools.js';

const SET_USAGE = 'usage: devboxd pools set SIZE COUNT [--blueprint ID]';

/**
 * Why a blueprint cannot have a pool, or null: its boxes are booted under no account, so it must be one every
 * account may boot (public), built, and without services (they would start in the pool, under no account).
 */
async function unpoolable(store: Store, id: string): Promise<string | null> {
  const b = await new SqlBlueprintStore(store.db).getById(id);
  if (!b) return `no blueprint ${id}`;
  if (b.status !== 'build_complete') return `blueprint ${id} is ${b.status}, not build_complete`;
  if (!b.isPublic)
    return `blueprint ${id} is private: a pool boots its boxes under no account, so only a public one can have one (devboxd blueprints publish ${id})`;
  if (b.parameters.services?.length) return `blueprint ${id} has services, which would start in the pool under no account`;
  return null;
}

/**
 * `devboxd pools`: what the warm pools keep per size (set here, in the database every server reads within a
 * few seconds), and what each node has ready now.
 */
export const POOL_COMMANDS: readonly ModuleCommand<CommandContext>[] = [
  {
    words: ['pools', 'list'],
    args: [],
    options: { json: { type: 'boolean', help: 'print JSON ({"settings": [...], "ready": [...]})' } },
    summary: `the warm pools (a size, or BLUEPRINT/SIZE): each one's count as set (not set: ${DEFAULT_SIZE} keeps each
server's DEVBOXD_WARM_POOL, others none), and the pooled boxes each node has ready (and booting) now`,
    run: ({ io, withStore }, _args, o) =>
      withStore(async (store) => {
        const settings = await new SqlPoolStore(store.db).list();
        const ready = new Map<string, { node: string; pool: string; ids: string[]; booting: number }>();
        for (const d of await store.devboxes.listByStatus(['provisioning', 'initializing', 'running'])) {
          if (!isPooled(d)) continue;
          const pool = poolName(String(d.launchParameters.resource_size_request ?? DEFAULT_SIZE), d.blueprintId ?? '');
          const r = ready.get(`${d.node}\t${pool}`) ?? { node: d.node, pool, ids: [], booting: 0 };
          if (d.status === 'running') r.ids.push(d.id);
          else r.booting++;
          ready.set(`${d.node}\t${pool}`, r);
        }
        const rows = [...ready.values()].map((r) => ({ node: r.node, pool: r.pool, ready: r.ids.length, booting: r.booting, devbox_ids: r.ids }));
        if (o.json) {
          const json = {
            settings: settings.map((s) => ({
              pool: poolName(s.size, s.blueprintId),
              size: s.size,
              blueprint_id: s.blueprintId || null,
              count: s.count,
              update_time_ms: s.updateTimeMs,
            })),
            ready: rows,
          };
          io.out(`${JSON.stringify(json, null, 2)}\n`);
          return 0;
        }
        io.out(`POOL\tCOUNT\n${settings.map((s) => `${poolName(s.size, s.blueprintId)}\t${s.count}\n`).join('')}`);
        if (!settings.some((s) => s.size === DEFAULT_SIZE && !s.blueprintId)) io.out(`${DEFAULT_SIZE}\t(DEVBOXD_WARM_POOL of each server)\n`);
        io.out(`\nNODE\tPOOL\tREADY\tBOOTING\n${rows.map((r) => `${r.node}\t${r.pool}\t${r.ready}\t${r.booting}\n`).join('')}`);
        return 0;
      }),
  },
  {
    words: ['pools', 'set'],
    args: ['SIZE', 'COUNT'],
    options: { blueprint: { type: 'string', placeholder: 'ID', help: 'a public blueprint (built, without services) instead of the default image' } },
    summary: `keep COUNT (0 to ${MAX_POOL}) boxes of SIZE (${Object.keys(SIZES).join(', ')}) ready on every node, of the
default image or of a public blueprint; 0 keeps none (also of ${DEFAULT_SIZE}, whatever DEVBOXD_WARM_POOL says)`,
    run: ({ io, withStore }, { SIZE, COUNT }, o) => {
      if (!Object.hasOwn(SIZES, SIZE!))
        throw new UsageError(`devboxd pools set: SIZE must be one of ${Object.keys(SIZES).join(', ')}, got "${SIZE}"`, SET_USAGE);
      if (!/^\d+$/.test(COUNT!) || Number(COUNT) > MAX_POOL)
        throw new UsageError(`devboxd pools set: COUNT must be an integer between 0 and ${MAX_POOL}, got "${COUNT}"`, SET_USAGE);
      const blueprint = (o.blueprint as string | undefined) ?? '';
      return withStore(async (store) => {
        const why = blueprint && Number(COUNT) > 0 ? await unpoolable(store, blueprint) : null;
        if (why) {
          io.err(`devboxd pools set: ${why}\n`);
          return 1;
        }
        await new SqlPoolStore(store.db).set(SIZE!, blueprint, Number(COUNT));
        io.out(`warm pool ${poolName(SIZE!, blueprint)}: ${COUNT} per node (servers pick it up within 2 s)\n`);
        return 0;
      });
    },
  },
  {
    words: ['pools', 'clear'],
    args: [],
    summary: `forget every count devboxd pools set gave: ${DEFAULT_SIZE} keeps DEVBOXD_WARM_POOL again, other pools none`,
    run: ({ io, withStore }) =>
      withStore(async (store) => {
        const n = await new SqlPoolStore(store.db).clear();
        io.out(`cleared ${n} warm pool setting${n === 1 ? '' : 's'}\n`);
        return 0;
      }),
  },
];
