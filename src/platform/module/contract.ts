import type { FastifyInstance } from 'fastify';
import type { Logger } from '../../lib/logger.js';
import type { SealedTexts } from '../sealing/resealing.js';
import type { ModuleSchema } from '../store/module-schema.js';

/**
 * Every service the modules provide, by name. It starts empty: each module adds the names it provides from
 * its own folder (`declare module '…/platform/module/index.js' { interface Services { … } }`), so the
 * platform names no resource and adding a module edits no shared list of types.
 */
// biome-ignore lint/suspicious/noEmptyInterface: filled by declaration merging, one module at a time
export interface Services {}

export type ServiceName = keyof Services;

/** The environment a module parses its own settings from (process.env at start; tests pass their own). */
export type Env = Readonly<Record<string, string | undefined>>;

/**
 * The order the composition root starts what modules built, after every module is built and the durable jobs
 * resumed. Each phase runs in every module (dependencies first) before the next begins:
 * - `settle`: settle records a restart left half-way (snapshots, suspends, expired objects);
 * - `reconcile`: adopt or end the boxes the previous server ran (the supervisor) and rebind what they held;
 * - `reattach`: give adopted boxes their network rules again (before anything links to them);
 * - `relink`: link adopted boxes to the box services again;
 * - `adopt`: restart what adopted boxes had running (brokers), reconcile output and tokens;
 * - `run`: start background work (the supervisor's loop, runners, evictions, seeds).
 */
export const PHASES = ['settle', 'reconcile', 'reattach', 'relink', 'adopt', 'run'] as const;
export type Phase = (typeof PHASES)[number];

/** What `build` gets: the host's parts, the module's own config, and the services of the modules it needs. */
export interface BuildContext<H, C> {
  host: H;
  /** What the module's `config` parsed (undefined for a module without settings). */
  config: C;
  /** A logger tagged with the module's name. */
  log: Logger;
  /**
   * A service of a module this one declared in `needs` (directly or through them): those are built by now.
   * Asking for any other is a wiring error, thrown at once, that names both modules.
   */
  use<K extends ServiceName>(name: K): Services[K];
}

/** Thrown for a command line that names no command or does not fit one: exit 2, the usage line on stderr. */
export class UsageError extends Error {
  constructor(
    message: string,
    readonly usage: string,
  ) {
    super(message);
  }
}

/** One option of a command: a string (with the placeholder `--help` shows) or a flag. */
export interface CommandOption {
  type: 'string' | 'boolean';
  placeholder?: string;
  help: string;
}

/**
 * A command of the operator CLI (`devboxd <words…> <ARGS…> [--options]`) that a module brings; `X` is what the
 * CLI gives it to work with (src/host.ts: CommandContext). It answers the exit code.
 */
export interface ModuleCommand<X> {
  words: string[];
  /** Positional arguments by name, required; the last may be optional, in brackets (`'[NODE]'`, given as `NODE`). */
  args: string[];
  options?: Record<string, CommandOption>;
  /** One line (more lines indented) for the usage text. */
  summary: string;
  run(ctx: X, args: Record<string, string>, options: Record<string, string | boolean | undefined>): Promise<number>;
}

/**
 * One resource, whole: everything the composition root needs to add it to the server. A module lists the
 * modules it needs; the root builds them first (a topological sort), so `use` never sees a service before it
 * exists, and a cycle is an error at start that names it.
 */
export interface ResourceModule<H, C = unknown, X = unknown> {
  /** Unique; names the module in errors, logs and (with `schema`) the migrations it recorded. */
  name: string;
  /** The modules whose services `build` and the hooks use. */
  needs?: readonly AnyModule<H>[];
  /** Parses the module's own settings; a bad value throws a ConfigError naming the variable. */
  config?: (env: Env) => C;
  /** The module's tables, migrated in module order after the core tables. */
  schema?: ModuleSchema;
  /** What the module keeps sealed under the master key, re-sealed by `devboxd secrets rotate-key`. */
  sealed?: SealedTexts;
  /** Builds the module's services (and registers its extensions, job kinds, box routes) and names them. */
  build(ctx: BuildContext<H, C>): Promise<Partial<Services>> | Partial<Services>;
  /** Registers the module's HTTP routes, each with its auth row (`config.auth` on the route). */
  routes?(app: FastifyInstance, services: Services, host: H): unknown;
  /** Work in the start phases (see PHASES), once everything is built (awaited when it answers a promise). */
  start?: Partial<Record<Phase, (services: Services, host: H) => unknown>>;
  /** Stops background work and closes what `build` opened; modules close in the reverse of their order. */
  close?(services: Services, host: H): unknown;
  /** Its commands of the operator CLI (they run without a server, on the database the server uses). */
  commands?: readonly ModuleCommand<X>[];
}

/** A module of any config type (lists of modules hold several). */
export type AnyModule<H, X = any> = ResourceModule<H, any, X>;
