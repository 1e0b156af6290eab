import { ERRORS } from '../../platform/errors.js';
import { newId } from '../../lib/ids.js';
import type { Logger } from '../../lib/logger.js';
import type { Page, PageQuery, Store } from '../../platform/store/types.js';
import type { Scenario } from '../scenarios/index.js';
import type { ScenariosPort } from './ports.js';
import { SqlBenchmarkStore } from './sql-benchmark-store.js';
import type { Benchmark, BenchmarkListFilter, BenchmarkPatch } from './types.js';

/** Scenarios one benchmark holds (the most a definitions page or a run starts). */
export const MAX_SCENARIOS = 5000;

/**
 * Benchmarks: named sets of scenarios (own or public ones) with the environment variables and secrets their
 * runs need. A public benchmark (the built-in one) is readable and runnable by every account and changed by
 * none through the API.
 */
export class BenchmarkService {
  readonly benchmarks: SqlBenchmarkStore;

  constructor(
    store: Store,
    private readonly scenarios: () => ScenariosPort,
    /** DEVBOXD_BENCHMARK_ACCOUNT_MAX_BENCHMARKS. */
    private readonly accountMax: number,
    private readonly log: Logger,
  ) {
    this.benchmarks = new SqlBenchmarkStore(store.db);
  }

  async create(accountId: string, patch: BenchmarkPatch, opts: { isPublic?: boolean } = {}): Promise<Benchmark> {
    const held = await this.benchmarks.count(accountId);
    if (held >= this.accountMax) throw ERRORS.forbidden(`the account holds ${held} benchmarks, its limit (DEVBOXD_BENCHMARK_ACCOUNT_MAX_BENCHMARKS)`);
    const now = Date.now();
    const b: Benchmark = {
      id: newId('bmd'),
      accountId,
      name: checkName(patch.name ?? ''),
      isPublic: opts.isPublic ?? false,
      status: 'active',
      attribution: patch.attribution || null,
      description: patch.description || null,
      metadata: patch.metadata ?? {},
      requiredEnvironmentVariables: unique(patch.requiredEnvironmentVariables ?? []),
      requiredSecretNames: unique(patch.requiredSecretNames ?? []),
      scenarioIds: await this.checkScenarios(accountId, patch.scenarioIds ?? []),
      createTimeMs: now,
      updateTimeMs: now,
    };
    await this.benchmarks.insert(b);
    this.log.info({ benchmark: b.id, account: accountId, scenarios: b.scenarioIds.length }, 'benchmark created');
    return b;
  }

  /** Own or public benchmark; 404 otherwise. */
  async get(accountId: string, id: string): Promise<Benchmark> {
    const b = await this.benchmarks.get(accountId, id);
    if (!b) throw ERRORS.notFound('benchmark', id);
    return b;
  }

  list(accountId: string, filter: BenchmarkListFilter, page: PageQuery): Promise<Page<Benchmark>> {
    return this.benchmarks.list(accountId, filter, page);
  }

  listPublic(filter: BenchmarkListFilter, page: PageQuery): Promise<Page<Benchmark>> {
    return this.benchmarks.listPublic(filter, page);
  }

  /** Given fields replace the stored ones whole; an empty string clears attribution and description. */
  async update(accountId: string, id: string, patch: BenchmarkPatch): Promise<Benchmark> {
    const scenarioIds = patch.scenarioIds && (await this.checkScenarios(accountId, patch.scenarioIds));
    return this.change(accountId, id, (old) => ({
      ...old,
      name: patch.name !== undefined ? checkName(patch.name) : old.name,
      attribution: patch.attribution !== undefined ? patch.attribution || null : old.attribution,
      description: patch.description !== undefined ? patch.description || null : old.description,
      metadata: patch.metadata ?? old.metadata,
      requiredEnvironmentVariables: patch.requiredEnvironmentVariables ? unique(patch.requiredEnvironmentVariables) : old.requiredEnvironmentVariables,
      requiredSecretNames: patch.requiredSecretNames ? unique(patch.requiredSecretNames) : old.requiredSecretNames,
      scenarioIds: scenarioIds ?? old.scenarioIds,
    }));
  }

  /** Adds (at the end, once) then removes scenario ids; a removed id the benchmark does not hold is ignored. */
  async updateScenarios(accountId: string, id: string, add: string[], remove: string[]): Promise<Benchmark> {
    await this.checkScenarios(accountId, add);
    const gone = new Set(remove);
    return this.change(accountId, id, (old) => {
      const ids = unique([...old.scenarioIds, ...add]).filter((s) => !gone.has(s));
      if (ids.length > MAX_SCENARIOS) throw ERRORS.invalid(`a benchmark holds at most ${MAX_SCENARIOS} scenarios`);
      return { ...old, scenarioIds: ids };
    });
  }

  /** One page of the benchmark's scenarios, in the benchmark's order; the cursor is a scenario id of it. */
  async definitions(accountId: string, id: string, page: PageQuery): Promise<Page<Scenario>> {
    const b = await this.get(accountId, id);
    let from = 0;
    if (page.startingAfter) {
      const at = b.scenarioIds.indexOf(page.startingAfter);
      if (at < 0) throw ERRORS.invalid(`starting_after: scenario ${page.startingAfter} is not in benchmark ${id}`);
      from = at + 1;
    }
    const ids = b.scenarioIds.slice(from, from + page.limit);
    const items: Scenario[] = [];
    // As the caller may read them: a public benchmark shows no private scenario of its owner.
    for (const s of ids) items.push(await this.scenarios().get(accountId, s));
    return { items, hasMore: from + ids.length < b.scenarioIds.length, totalCount: page.includeTotalCount ? b.scenarioIds.length : undefined };
  }

  /** Reads the own benchmark, applies `next`, writes it unless changed meanwhile (then merges again). */
  private async change(accountId: string, id: string, next: (old: Benchmark) => Benchmark): Promise<Benchmark> {
    for (let attempt = 0; ; attempt++) {
      const old = await this.get(accountId, id);
      if (old.accountId !== accountId) throw ERRORS.forbidden(`benchmark ${id} is a public benchmark of another account; it cannot be changed`);
      const b = { ...next(old), updateTimeMs: Math.max(Date.now(), old.updateTimeMs + 1) };
      if (await this.benchmarks.replace(b, old.updateTimeMs)) return b;
      if (attempt >= 5) throw ERRORS.conflict(`benchmark ${id} is being changed by another request; try again`);
    }
  }

  /** Each id must name a scenario the account can run (its own or a public one); duplicates collapse. */
  private async checkScenarios(accountId: string, ids: string[]): Promise<string[]> {
    const out = unique(ids);
    if (out.length > MAX_SCENARIOS) throw ERRORS.invalid(`a benchmark holds at most ${MAX_SCENARIOS} scenarios`);
    for (const s of out) await this.scenarios().get(accountId, s);
    return out;
  }
}

const unique = (xs: string[]) => [...new Set(xs)];

function checkName(name: string): string {
  if (name.trim().length === 0) throw ERRORS.invalid('name must not be blank');
  return name;
}
