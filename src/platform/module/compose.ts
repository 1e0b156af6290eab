import type { FastifyInstance } from 'fastify';
import type { Logger } from '../../lib/logger.js';
import { type AnyModule, type Env, PHASES, type ServiceName, type Services } from './contract.js';

/**
 * The modules in the order they are built: each after every module it needs, and otherwise in the order
 * given (the registration list), so the order is the same at every start. A cycle is an error naming it:
 * with it no order builds each service before its users.
 */
export function moduleOrder<H>(modules: readonly AnyModule<H>[]): AnyModule<H>[] {
  const byName = new Map<string, AnyModule<H>>();
  for (const m of modules) {
    if (byName.has(m.name)) throw new Error(`two modules are named ${m.name}`);
    byName.set(m.name, m);
  }
  const order: AnyModule<H>[] = [];
  const state = new Map<string, 'visiting' | 'done'>();
  const visit = (m: AnyModule<H>, path: string[]) => {
    const s = state.get(m.name);
    if (s === 'done') return;
    if (s === 'visiting') throw new Error(`modules need each other in a cycle: ${[...path.slice(path.indexOf(m.name)), m.name].join(' → ')}`);
    state.set(m.name, 'visiting');
    for (const need of m.needs ?? []) {
      if (byName.get(need.name) !== need) throw new Error(`module ${m.name} needs ${need.name}, which is not registered`);
      visit(need, [...path, m.name]);
    }
    state.set(m.name, 'done');
    order.push(m);
  };
  for (const m of modules) visit(m, []);
  return order;
}

/**
 * Every module's settings by module name, parsed from `env`; the first bad value throws (a ConfigError naming
 * it). Parsed before anything opens, and handed to `compose`.
 */
export function moduleConfigs<H>(modules: readonly AnyModule<H>[], env: Env): ReadonlyMap<string, unknown> {
  return new Map(modules.map((m) => [m.name, m.config?.(env)]));
}

export interface Composition {
  services: Services;
  /** Registers every module's routes, in module order. */
  routes(app: FastifyInstance): Promise<void>;
  /** Runs the start phases, each in every module before the next. */
  start(): Promise<void>;
  /** Closes the modules in the reverse of their build order; a failing close is logged and the rest still close. */
  close(): Promise<void>;
}

/**
 * Builds `modules` in dependency order over `host`. A module's `use` answers only services of modules it
 * needs (directly or transitively), checked on every call: a thunk called late cannot reach a module it did
 * not declare either.
 */
export async function compose<H>(modules: readonly AnyModule<H>[], host: H, configs: ReadonlyMap<string, unknown>, log: Logger): Promise<Composition> {
  const order = moduleOrder(modules);
  const services = {} as Record<string, unknown>;
  const owner = new Map<string, string>();
  const reach = new Map<string, Set<string>>();
  for (const m of order) {
    const reachable = new Set<string>([m.name]);
    for (const need of m.needs ?? []) for (const r of reach.get(need.name)!) reachable.add(r);
    reach.set(m.name, reachable);
    const use = <K extends ServiceName>(name: K): Services[K] => {
      const from = owner.get(name);
      if (from === undefined) throw new Error(`module ${m.name} uses ${String(name)}, which no module built before it provides`);
      if (!reachable.has(from)) throw new Error(`module ${m.name} uses ${String(name)} of module ${from} without needing ${from}`);
      return services[name] as Services[K];
    };
    const built = await m.build({ host, config: configs.get(m.name) as never, log: log.child({ module: m.name }), use });
    for (const [name, value] of Object.entries(built)) {
      if (owner.has(name)) throw new Error(`modules ${owner.get(name)} and ${m.name} both provide ${name}`);
      owner.set(name, m.name);
      services[name] = value;
    }
  }
  const all = services as unknown as Services;
  // What a module's routes, phases and close see: every service, but one of a module it does not need throws
  // as `use` does, when it is read (a route reads its services at registration, so a wrong need fails the start).
  const views = new Map(
    order.map((m) => {
      const reachable = reach.get(m.name)!;
      const view = new Proxy(all, {
        get(target, name, receiver) {
          const from = typeof name === 'string' ? owner.get(name) : undefined;
          if (from !== undefined && !reachable.has(from)) throw new Error(`module ${m.name} uses ${name as string} of module ${from} without needing ${from}`);
          return Reflect.get(target, name, receiver);
        },
      });
      return [m.name, view] as const;
    }),
  );
  return {
    services: all,
    async routes(app) {
      for (const m of order) await m.routes?.(app, views.get(m.name)!, host);
    },
    async start() {
      for (const phase of PHASES) for (const m of order) await m.start?.[phase]?.(views.get(m.name)!, host);
    },
    async close() {
      for (const m of [...order].reverse()) {
        try {
          await m.close?.(views.get(m.name)!, host);
        } catch (err) {
          log.error({ err, module: m.name }, 'module close failed');
        }
      }
    },
  };
}
