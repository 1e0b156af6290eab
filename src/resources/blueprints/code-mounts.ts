/**
 * A blueprint's `code_mounts`: each repository is cloned into the image at build time, as a step of its own
 * after the setup commands, through the repositories' git relay (the token goes upstream, never into a box),
 * into the home of the image's user (`~/<repo_name>`, as a devbox's code mount), then its install command
 * runs there. A mount's token is kept sealed in the stored parameters (like a service's image password),
 * opened only for the build, never in a view.
 */
import { ERRORS } from '../../platform/errors.js';
import type { Sandbox } from '../../runtime/driver.js';
import type { CodeMount } from '../devboxes/index.js';
import { checkRepoPart, checkToken, GIT_REF } from '../../platform/git-names.js';
import type { Sealer } from '../../platform/sealing/sealer.js';
import type { CodeStep } from './build-steps.js';
import { resolveRef } from './git-refs.js';

/** Most code mounts one blueprint takes (as a devbox). */
export const MAX_CODE_MOUNTS = 20;

import type { CodeMountSpec } from './types.js';

export type { CodeMountSpec };

interface StoredCodeMount extends CodeMountSpec {
  token_sealed?: string;
}

/** What builds clone with (the repositories module: src/resources/repositories/build-clone.ts). */
export interface CodeClones {
  /** The token (the mount's, else the account's connection's) and install command (the mount's, else its manifest's). */
  plan(accountId: string, m: CodeMount): Promise<{ token: string | null; install: string | null }>;
  upstreamUrl(owner: string, name: string): string;
  /** fetch through the outbound guard (the ref is resolved on the server). */
  fetch: typeof globalThis.fetch;
  /** Clones into `~/<name>` of the box user through the relay; resolves null, or why it failed. */
  clone(
    sandbox: Sandbox,
    boxId: string,
    repo: { owner: string; name: string; token: string | null; ref: string | null },
    signal: AbortSignal,
  ): Promise<string | null>;
}

/** Refuses (400) what a devbox's code mount refuses, and two mounts cloning into one directory. */
export function checkCodeMounts(mounts: CodeMountSpec[]): void {
  if (mounts.length > MAX_CODE_MOUNTS) throw ERRORS.invalid(`at most ${MAX_CODE_MOUNTS} code_mounts per blueprint`);
  const names = new Set<string>();
  for (const [i, m] of mounts.entries()) {
    const at = `code_mounts[${i}]`;
    checkRepoPart(m.repo_owner, `${at}.repo_owner`);
    checkRepoPart(m.repo_name, `${at}.repo_name`);
    if (m.token != null) checkToken(m.token, `${at}.token`);
    if (m.git_ref != null && !GIT_REF.test(m.git_ref))
      throw ERRORS.invalid(`${at}.git_ref must be a branch or tag name, got ${JSON.stringify(m.git_ref.slice(0, 100))}`);
    if (names.has(m.repo_name)) throw ERRORS.invalid(`${at}: two code mounts clone into ~/${m.repo_name}`);
    names.add(m.repo_name);
  }
}

/** Binds a sealed token to its blueprint and repository: copied elsewhere, it does not open. */
const aadOf = (blueprintId: string, m: CodeMountSpec) => `blueprint-code-mount:${blueprintId}:${m.repo_owner}/${m.repo_name}`;

type Seals = Pick<Sealer, 'open' | 'seal'>;

/** The code mounts as stored: each token sealed. */
export function sealCodeMounts(mounts: CodeMountSpec[], blueprintId: string, sealer: Seals): CodeMountSpec[] {
  return mounts.map(({ token, ...m }) => (token ? ({ ...m, token_sealed: sealer.seal(token, aadOf(blueprintId, m)) } as StoredCodeMount) : m));
}

/** A stored mount in the build's terms, its token opened; throws (SealError) when it does not open. */
export function openCodeMount(m: CodeMountSpec, blueprintId: string, sealer: Pick<Sealer, 'open'>): CodeMount {
  const sealed = (m as StoredCodeMount).token_sealed;
  return {
    repoOwner: m.repo_owner,
    repoName: m.repo_name,
    token: sealed ? sealer.open(sealed, aadOf(blueprintId, m)) : null,
    gitRef: m.git_ref ?? null,
    installCommand: m.install_command ?? null,
  };
}

/** A mount as views show it: without its token (sealed or not). */
export function codeMountView(m: CodeMountSpec): CodeMountSpec {
  const { token: _t, token_sealed: _s, ...rest } = m as StoredCodeMount;
  return rest;
}

/** Re-seals one stored mount under the sealer's current key (`secrets rotate-key`); null when it need not or cannot. */
export function resealCodeMount(m: CodeMountSpec, blueprintId: string, sealer: Seals, keyId: string): CodeMountSpec | null {
  const sealed = (m as StoredCodeMount).token_sealed;
  if (!sealed || sealed.startsWith(`v1.${keyId}.`)) return null;
  try {
    return sealCodeMounts([{ ...codeMountView(m), token: sealer.open(sealed, aadOf(blueprintId, m)) }], blueprintId, sealer)[0]!;
  } catch {
    return null;
  }
}

/** The build's steps for the blueprint's stored mounts (tokens opened now: one that does not open fails the build). */
export function codeSteps(accountId: string, blueprintId: string, mounts: CodeMountSpec[], clones: CodeClones, sealer: Pick<Sealer, 'open'>): CodeStep[] {
  return mounts.map((spec) => {
    const m = openCodeMount(spec, blueprintId, sealer);
    const repo = `${m.repoOwner}/${m.repoName}`;
    let token: string | null = null;
    return {
      repo,
      dir: m.repoName,
      ref: m.gitRef,
      async prepare(signal) {
        const plan = await clones.plan(accountId, m);
        token = plan.token;
        const commit = await resolveRef(clones.fetch, clones.upstreamUrl(m.repoOwner, m.repoName), token, m.gitRef, signal, `code mount ${repo}`);
        return { commit, install: plan.install };
      },
      clone: (box, signal) => clones.clone(box.sandbox, box.id, { owner: m.repoOwner, name: m.repoName, token, ref: m.gitRef }, signal),
    };
  });
}
