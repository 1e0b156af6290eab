import type { BoxServices } from '../../platform/boxlink/index.js';
import type { Sandbox } from '../../runtime/driver.js';
import type { CodeMount } from '../devboxes/index.js';
import { cloneFailure, cloneInBox } from './clone.js';
import { codeMountPlan } from './code-mount.js';
import type { GitRelay } from './git-relay.js';
import type { RepositoryService } from './repository-service.js';
import type { SqlRepositoryStore } from './sql-repository-store.js';

/**
 * What blueprint builds use of this module to clone a blueprint's code mounts into an image: the mount's
 * plan (token, install command) as a devbox's code mount has it, the repository's address, and a clone
 * through the git relay into the home of the step box's user (its box services linked for the clone only).
 */
export function buildClones(deps: {
  store: SqlRepositoryStore;
  repos: () => RepositoryService;
  relay: GitRelay;
  boxServices: () => BoxServices;
  servicesPort: number;
}) {
  return {
    plan: (accountId: string, m: CodeMount) => codeMountPlan(deps.store, deps.repos(), accountId, m),
    upstreamUrl: (owner: string, name: string) => deps.relay.upstreamUrl(owner, name),
    /** fetch through the outbound guard, to the git server. */
    fetch: deps.relay.fetch,
    /** Clones owner/name at `ref` into `~/<name>` of the box user; resolves null, or why it failed. */
    async clone(
      sandbox: Sandbox,
      boxId: string,
      repo: { owner: string; name: string; token: string | null; ref: string | null },
      signal: AbortSignal,
    ): Promise<string | null> {
      const services = deps.boxServices();
      await services.link(boxId);
      try {
        const { run, grant } = await cloneInBox(sandbox, deps.relay, deps.servicesPort, { boxId, ...repo, dest: repo.name, shallow: false }, signal);
        return run.exitCode === 0 ? null : cloneFailure(run, grant, `cloning ${repo.owner}/${repo.name}${repo.ref ? ` at ${repo.ref}` : ''}`).reason;
      } finally {
        await services.unlink(boxId).catch(() => undefined);
      }
    },
  };
}

export type BuildClones = ReturnType<typeof buildClones>;
