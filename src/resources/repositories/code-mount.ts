import { ERRORS } from '../../platform/errors.js';
import type { CodeMount } from '../devboxes/index.js';
import type { BootStep, CreateResolver } from '../devboxes/index.js';
import { cloneFailure, cloneInBox, GIT_REF, runInBox } from './clone.js';
import type { GitRelay } from './git-relay.js';
import { checkRepoPart, checkToken, type RepositoryService } from './repository-service.js';
import type { SqlRepositoryStore } from './sql-repository-store.js';

/** Most code mounts one box takes. */
const MAX_CODE_MOUNTS = 20;

/**
 * Code mounts (`code_mount` in a devbox's `mounts`, and legacy `code_mounts`): at boot, before the launch
 * commands, each repository is cloned through the git relay into the box user's home (`~/<repo_name>`), at
 * `git_ref` or the default branch, then its install command runs there: the mount's `install_command`, else
 * the install commands of the repository's latest manifest when the account connected it. The clone uses
 * the mount's token, else the connection's. All mounts share one deadline (DEVBOXD_CODE_MOUNT_TIMEOUT); a
 * failure ends the box in failure with the reason.
 */
export function codeMountExtensions(deps: {
  store: SqlRepositoryStore;
  repos: () => RepositoryService;
  relay: GitRelay;
  servicesPort: number;
  timeoutMs: number;
}): { resolver: CreateResolver; bootStep: BootStep } {
  const resolver: CreateResolver = async (_accountId, input) => {
    const mounts = input.codeMounts ?? [];
    if (mounts.length > MAX_CODE_MOUNTS) throw ERRORS.invalid(`at most ${MAX_CODE_MOUNTS} code mounts per devbox`);
    const names = new Set<string>();
    for (const [i, m] of mounts.entries()) {
      const at = `code mount ${i}`;
      checkRepoPart(m.repoOwner, `${at}: repo_owner`);
      checkRepoPart(m.repoName, `${at}: repo_name`);
      if (m.token !== null) checkToken(m.token, `${at}: token`);
      if (m.gitRef !== null && !GIT_REF.test(m.gitRef))
        throw ERRORS.invalid(`${at}: git_ref must be a branch or tag name, got ${JSON.stringify(m.gitRef.slice(0, 100))}`);
      if (names.has(m.repoName)) throw ERRORS.invalid(`${at}: two code mounts clone into ~/${m.repoName}`);
      names.add(m.repoName);
    }
    return undefined;
  };

  const bootStep: BootStep = {
    name: 'code mounts',
    applies: (ctx) => !ctx.resuming && ctx.codeMounts.length > 0,
    async run({ devbox, sandbox, codeMounts }) {
      const deadline = AbortSignal.timeout(deps.timeoutMs);
      const late = () => new Error(`code mounts took longer than ${Math.round(deps.timeoutMs / 1000)} s (DEVBOXD_CODE_MOUNT_TIMEOUT)`);
      for (const m of codeMounts) {
        const repo = `${m.repoOwner}/${m.repoName}`;
        const { token, install } = await codeMountPlan(deps.store, deps.repos(), devbox.accountId, m);
        const { run, grant } = await cloneInBox(
          sandbox,
          deps.relay,
          deps.servicesPort,
          { boxId: devbox.id, owner: m.repoOwner, name: m.repoName, token, ref: m.gitRef, dest: m.repoName, shallow: false },
          deadline,
        );
        if (deadline.aborted) throw late();
        if (run.exitCode !== 0)
          throw new Error(`code mount ${repo}: ${cloneFailure(run, grant, `cloning ${repo}${m.gitRef ? ` at ${m.gitRef}` : ''}`).reason}`);
        if (!install) continue;
        const done = await runInBox(sandbox, { argv: ['bash', '-c', `cd -- "$1" && ${install}`, 'bash', m.repoName] }, 0, deadline);
        if (deadline.aborted) throw late();
        if (done.exitCode !== 0) {
          const last = done.stderrTail.split('\n').pop();
          throw new Error(`code mount ${repo}: the install command failed with exit status ${done.exitCode}${last ? `: ${last.slice(0, 500)}` : ''}`);
        }
      }
    },
  };
  return { resolver, bootStep };
}

/**
 * A code mount's clone token and install command: the mount's, else what the account's connection holds
 * (its token; the install commands of its latest manifest, each workspace's in its path). Blueprint builds
 * plan their code mounts the same way.
 */
export async function codeMountPlan(
  store: SqlRepositoryStore,
  repos: RepositoryService,
  accountId: string,
  m: CodeMount,
): Promise<{ token: string | null; install: string | null }> {
  const conn = await store.byName(accountId, m.repoOwner, m.repoName);
  const token = m.token ?? (conn ? repos.tokenOf(conn) : null);
  if (m.installCommand !== null) return { token, install: m.installCommand || null };
  const manifest = conn && (await store.latestManifest(conn.id))?.manifest;
  const steps = (manifest?.workspaces ?? [])
    .map((w) => ({ path: w.path ?? '', cmds: w.dev_commands?.install?.length ? w.dev_commands.install : (w.workspace_setup_commands ?? []) }))
    .filter((w) => w.cmds.length && !w.path.split('/').includes('..'))
    // The path is quoted; the commands are not: they are shell commands by design (the account's own user
    // manifest, or what its repository's inspection derived), run as the box user in the account's own box.
    .map((w) => `(cd -- '${(w.path || '.').replaceAll("'", "'\\''")}' && ${w.cmds.join(' && ')})`);
  return { token, install: steps.length ? steps.join(' && ') : null };
}
