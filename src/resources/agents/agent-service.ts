import { DomainError, ERRORS } from '../../platform/errors.js';
import type { Page, PageQuery, Store } from '../../platform/store/types.js';
import { newId } from '../../lib/ids.js';
import type { ObjectService } from '../objects/index.js';
import type { AgentConfig } from './config.js';
import { checkSource, checkVersion } from './source.js';
import { SqlAgentStore } from './sql-agent-store.js';
import type { Agent, AgentListFilter, AgentMountInput, AgentSource, ResolvedAgentMount } from './types.js';

export interface CreateAgentInput {
  name: string;
  version?: string | null;
  source?: AgentSource | null;
}

/**
 * Agents: named, versioned sources (npm, pip, git, object) that a devbox's `agent_mount` installs into the box
 * at boot. Records only; the install runs in the box (devbox-extensions.ts).
 */
export class AgentService {
  readonly store: SqlAgentStore;

  constructor(
    db: Store,
    /** An object source's object is checked against it. */
    private readonly objects: ObjectService,
    private readonly config: AgentConfig,
  ) {
    this.store = new SqlAgentStore(db.db);
  }

  async create(accountId: string, input: CreateAgentInput): Promise<Agent> {
    const source = input.source ?? null;
    if (source) {
      checkSource(source);
      // The version is what npm or pip install when the source names none; otherwise it is only a label.
      const installs = (source.npm && !source.npm.npm_version) || (source.pip && !source.pip.pip_version);
      if (installs && input.version) checkVersion(input.version, 'version');
      if (source.object) await this.readableObject(accountId, source.object.object_id, 'source.object.object_id');
    }
    const a: Agent = {
      id: newId('agt'),
      accountId,
      name: input.name,
      version: input.version ?? null,
      source,
      isPublic: false,
      createTimeMs: Date.now(),
    };
    const held = await this.store.insertBounded(a, this.config.accountMax);
    if (held !== null) throw ERRORS.forbidden(`the account holds ${held} agents, its limit (DEVBOXD_AGENT_ACCOUNT_MAX): delete some first`);
    return a;
  }

  /** The account's agent, or a public one. */
  async get(accountId: string, id: string): Promise<Agent> {
    const a = await this.store.getById(id);
    if (!a || (a.accountId !== accountId && !a.isPublic)) throw ERRORS.notFound('agent', id);
    return a;
  }

  list(accountId: string, filter: AgentListFilter, page: PageQuery): Promise<Page<Agent>> {
    return this.store.list(accountId, filter, page);
  }

  listPublic(filter: AgentListFilter, page: PageQuery): Promise<Page<Agent>> {
    return this.store.list(null, filter, page);
  }

  /**
   * Removes the account's agent for good. Boxes that mounted it keep what was installed (their disk holds
   * it, and their record the agent as resolved), so deleting an agent in use is allowed.
   */
  async delete(accountId: string, id: string): Promise<Agent> {
    const a = await this.get(accountId, id);
    if (a.accountId !== accountId || !(await this.store.remove(accountId, id))) throw ERRORS.notFound('agent', id);
    return a;
  }

  devboxCounts(accountId: string): Promise<{ counts: Record<string, number>; total: number }> {
    return this.store.devboxCounts(accountId);
  }

  /** An agent mount of a create request, checked and resolved to the agent it installs (400s name `field`). */
  async resolveMount(accountId: string, m: AgentMountInput, field: string): Promise<ResolvedAgentMount> {
    if (!m.agentId && !m.agentName) throw ERRORS.invalid(`${field}: agent_id or agent_name is required`);
    let agent: Agent | undefined;
    if (m.agentId) {
      agent = await this.get(accountId, m.agentId).catch((err: unknown) => {
        throw err instanceof DomainError && err.code === 'not_found' ? ERRORS.invalid(`${field}.agent_id: agent ${m.agentId} not found`) : err;
      });
      if (m.agentName && agent.name !== m.agentName) throw ERRORS.invalid(`${field}: agent ${m.agentId} is named "${agent.name}", not "${m.agentName}"`);
    } else {
      agent = await this.store.latestByName(accountId, m.agentName!);
      if (!agent) throw ERRORS.invalid(`${field}.agent_name: no agent named "${m.agentName}"`);
      // The account's own agent of that name wins. A name falls back to another account's public agent only
      // without a token: a typo (or a deleted agent) must not send the token to someone else's repository.
      if (m.authToken !== null && agent.accountId !== accountId) {
        throw ERRORS.invalid(
          `${field}.agent_name: the account has no agent named "${m.agentName}"; name a public agent with a token by its agent_id (${agent.id})`,
        );
      }
    }
    const source = agent.source;
    if (!source) throw ERRORS.invalid(`${field}: agent ${agent.id} has no source to install`);
    if (m.agentPath !== null && !m.agentPath.startsWith('/'))
      throw ERRORS.invalid(`${field}.agent_path must be an absolute path in the box, got "${m.agentPath}"`);
    if (m.agentPath === null && (source.type === 'git' || source.type === 'object')) {
      throw ERRORS.invalid(`${field}.agent_path is required for a ${source.type} agent (where it goes in the box)`);
    }
    if (m.authToken !== null) {
      if (source.type !== 'git') throw ERRORS.invalid(`${field}.auth_token is only for git agents; agent ${agent.id} is a ${source.type} agent`);
      // Over http:// the token would travel in cleartext.
      if (!/^https:\/\//.test(source.git!.repository))
        throw ERRORS.invalid(`${field}.auth_token needs an https:// repository; agent ${agent.id} clones ${source.git!.repository}`);
    }
    // The box reads the object as the agent's owner (publishing the agent is the operator's grant): it must
    // still be there and complete, or the create is refused here rather than the box failing at boot.
    if (source.object) await this.readableObject(agent.accountId, source.object.object_id, `${field}: agent ${agent.id}'s source.object.object_id`);
    const { id, accountId: owner, name, version } = agent;
    return { agent: { id, accountId: owner, name, version, source }, agentPath: m.agentPath };
  }

  private async readableObject(accountId: string, objectId: string, field: string): Promise<void> {
    const o = await this.objects.get(accountId, objectId).catch((err: unknown) => {
      throw err instanceof DomainError && err.code === 'not_found' ? ERRORS.invalid(`${field}: object ${objectId} not found`) : err;
    });
    if (o.state !== 'READ_ONLY') throw ERRORS.invalid(`${field}: object ${objectId} is ${o.state}; complete its upload first`);
  }
}
