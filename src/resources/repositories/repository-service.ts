import { newId } from '../../lib/ids.js';
import type { Logger } from '../../lib/logger.js';
import { ERRORS } from '../../platform/errors.js';
import type { JobRunner } from '../../platform/jobs/job-runner.js';
import type { Page, PageQuery } from '../../platform/store/types.js';
import { SealError, type Sealer } from '../../platform/sealing/sealer.js';
import { DEFAULT_FROM } from '../blueprints/index.js';
import { checkRepoPart, checkToken } from '../../platform/git-names.js';

export { checkRepoPart, checkToken, REPO_PART, TOKEN_MAX } from '../../platform/git-names.js';
import type { SqlRepositoryStore } from './sql-repository-store.js';
import type { Inspection, RepositoryConnection, RepositoryManifest, UserManifestInput } from './types.js';

export const INSPECT_JOB = 'repository.inspect';
/** Connections one account holds at once. */
export const MAX_CONNECTIONS_PER_ACCOUNT = 1000;

/** The AAD of a connection's sealed token: it opens only on its own row. */
export const tokenAad = (accountId: string, repositoryId: string) => `repository\0${accountId}\0${repositoryId}`;

/** A blueprint an inspection may run on, as the repositories see it. */
export interface BlueprintRef {
  id: string;
  name: string;
  status: string;
  layers: string[];
}

export interface ConnectInput {
  owner: string;
  name: string;
  blueprintId?: string | null;
  token?: string | null;
}

/**
 * Repository connections (`<git base>/<owner>/<name>`) and their inspections. A connection's token is
 * sealed at rest and only opened to fetch (never returned). Inspections are durable jobs (INSPECT_JOB):
 * one pending per connection at a time; add_user_manifest records the user's manifest whether or not an
 * inspection ran.
 */
export class RepositoryService {
  constructor(
    private readonly store: SqlRepositoryStore,
    private readonly sealer: Sealer,
    private readonly jobs: () => JobRunner,
    private readonly blueprint: (accountId: string, id: string) => Promise<BlueprintRef | undefined>,
    private readonly log: Logger,
  ) {}

  /** Connects the repository and starts its first inspection. */
  async create(accountId: string, input: ConnectInput): Promise<RepositoryConnection> {
    checkRepoPart(input.owner, 'owner');
    checkRepoPart(input.name, 'name');
    if (input.token) checkToken(input.token, 'github_auth_token');
    if (input.blueprintId) await this.usableBlueprint(accountId, input.blueprintId);
    if ((await this.store.count(accountId)) >= MAX_CONNECTIONS_PER_ACCOUNT) {
      throw ERRORS.forbidden(`the account holds ${MAX_CONNECTIONS_PER_ACCOUNT} repository connections, the most it may; delete one first`);
    }
    const id = newId('repo');
    const r: RepositoryConnection = {
      id,
      accountId,
      owner: input.owner,
      name: input.name,
      blueprintId: input.blueprintId ?? null,
      tokenSealed: input.token ? this.sealer.seal(input.token, tokenAad(accountId, id)) : null,
      createTimeMs: Date.now(),
    };
    const inspection = pendingInspection(id);
    await this.queue(inspection.id, () => this.store.insert(r, inspection));
    this.log.info({ repository: id, account: accountId, repo: `${r.owner}/${r.name}` }, 'repository connected');
    return r;
  }

  async get(accountId: string, id: string): Promise<RepositoryConnection> {
    const r = await this.store.get(accountId, id);
    if (!r) throw ERRORS.notFound('repository connection', id);
    return r;
  }

  list(accountId: string, filter: { owner?: string; name?: string }, page: PageQuery): Promise<Page<RepositoryConnection>> {
    return this.store.list(accountId, filter, page);
  }

  /** Deletes the connection with its inspections; a running inspection finds it gone and stops. */
  async delete(accountId: string, id: string): Promise<RepositoryConnection> {
    const r = await this.store.delete(accountId, id);
    if (!r) throw ERRORS.notFound('repository connection', id);
    this.log.info({ repository: id, account: accountId }, 'repository connection deleted');
    return r;
  }

  /**
   * Inspects the repository's default branch now: a new pending inspection, or the one already pending
   * (one at a time per connection). A token given replaces the connection's (and is what the pending
   * inspection fetches with, unless its clone has begun); `blueprintId` (refresh) changes the base.
   */
  async inspect(accountId: string, id: string, change: { token?: string | null; blueprintId?: string | null } = {}): Promise<Inspection> {
    const r = await this.get(accountId, id);
    if (change.token) checkToken(change.token, 'github_auth_token');
    if (change.blueprintId) await this.usableBlueprint(accountId, change.blueprintId);
    await this.store.update(r.id, {
      tokenSealed: change.token ? this.sealer.seal(change.token, tokenAad(accountId, r.id)) : undefined,
      blueprintId: change.blueprintId ?? undefined,
    });
    const pending = await this.store.pending(r.id);
    if (pending) return pending;
    const inspection = pendingInspection(r.id);
    if (await this.queue(inspection.id, () => this.store.addInspection(inspection))) return inspection;
    // A concurrent call added one first (one pending per connection is a constraint): that one.
    return (await this.store.pending(r.id)) ?? inspection;
  }

  async inspections(accountId: string, id: string): Promise<Inspection[]> {
    return this.store.inspections((await this.get(accountId, id)).id);
  }

  async inspection(accountId: string, inspectionId: string): Promise<Inspection> {
    const i = await this.store.inspectionOf(accountId, inspectionId);
    if (!i) throw ERRORS.notFound('repository inspection', inspectionId);
    return i;
  }

  /**
   * Records the user's manifest as an inspection of its own (`inspection_user_manifest_added`), whether or
   * not an inspection ran: each field given replaces the inspected one; languages and services (which
   * only an inspection finds) and what the user left out come from the latest manifest, if any.
   */
  async addUserManifest(accountId: string, repositoryId: string, input: Partial<UserManifestInput>): Promise<RepositoryManifest> {
    const r = await this.get(accountId, repositoryId);
    const latest = await this.store.latestManifest(r.id);
    const base = latest?.manifest;
    const user: RepositoryManifest = {
      container_config: {
        ...(input.container_config ?? base?.container_config ?? { base_image_name: DEFAULT_FROM, setup_commands: [] }),
        architecture: 'x86_64',
      },
      workspaces: input.workspaces ?? base?.workspaces ?? [],
      languages: base?.languages ?? [],
      containerized_services: base?.containerized_services ?? null,
      required_env_vars: input.required_env_vars !== undefined ? input.required_env_vars : (base?.required_env_vars ?? null),
      env_vars: input.env_vars !== undefined ? input.env_vars : (base?.env_vars ?? null),
    };
    await this.store.addInspection({
      id: newId('rin'),
      repositoryId: r.id,
      status: 'inspection_user_manifest_added',
      commitSha: latest?.commitSha ?? '',
      inspectedAtMs: Date.now(),
      manifest: user,
      userManifest: user,
      failureReason: null,
    });
    return user;
  }

  /** The connection's token in plain text (to fetch with), or null. */
  tokenOf(r: RepositoryConnection): string | null {
    if (!r.tokenSealed) return null;
    try {
      return this.sealer.open(r.tokenSealed, tokenAad(r.accountId, r.id));
    } catch (err) {
      if (!(err instanceof SealError)) throw err;
      throw ERRORS.unavailable(`the token of repository connection ${r.id} cannot be decrypted by this server: ${err.message}`);
    }
  }

  /** Records the inspection's job, then the inspection (`record`), then starts the job; a failed record drops it. */
  /** Records an inspection with its job; false (the job dropped) when `record` added nothing. */
  private async queue(inspectionId: string, record: () => Promise<boolean | void>): Promise<boolean> {
    const job = await this.jobs().add(INSPECT_JOB, inspectionId);
    let added: boolean | void;
    try {
      added = await record();
    } catch (err) {
      await this.jobs()
        .drop(job)
        .catch(() => undefined);
      throw err;
    }
    if (added === false) {
      await this.jobs()
        .drop(job)
        .catch(() => undefined);
      return false;
    }
    this.jobs().start(job);
    return true;
  }

  private async usableBlueprint(accountId: string, id: string): Promise<BlueprintRef> {
    const b = await this.blueprint(accountId, id);
    if (!b) throw ERRORS.invalid(`blueprint_id: no blueprint ${id}`);
    if (b.status !== 'build_complete') throw ERRORS.invalid(`blueprint_id: blueprint ${id} is ${b.status}, not build_complete`);
    return b;
  }
}

function pendingInspection(repositoryId: string): Inspection {
  return {
    id: newId('rin'),
    repositoryId,
    status: 'inspection_pending',
    commitSha: '',
    inspectedAtMs: Date.now(),
    manifest: null,
    userManifest: null,
    failureReason: null,
  };
}
