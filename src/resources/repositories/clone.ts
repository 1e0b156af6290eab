import type { BoxProcess, Sandbox } from '../../runtime/driver.js';
import type { CloneGrant, GitRelay } from './git-relay.js';

/** What a command in a box left: its exit, its stdout (up to a bound) and the tail of its stderr. */
export interface BoxRun {
  exitCode: number | null;
  stdout: string;
  /** stdout passed the bound: the rest was not kept (and the command was stopped). */
  overflow: boolean;
  stderrTail: string;
}

/**
 * Runs a command in the box to its end, keeping at most `maxStdout` bytes of stdout (past it the command is
 * killed: `overflow`); 0 discards stdout. `signal` kills it.
 */
export async function runInBox(
  sandbox: Sandbox,
  spec: { argv: string[]; env?: Record<string, string>; cwd?: string; asRoot?: boolean },
  maxStdout: number,
  signal?: AbortSignal,
): Promise<BoxRun> {
  const proc: BoxProcess = sandbox.spawn(spec);
  proc.stdin.end();
  proc.stdin.on('error', () => undefined);
  const out: Buffer[] = [];
  let size = 0;
  let overflow = false;
  let tail = '';
  proc.stdout.on('data', (d: Buffer) => {
    if (overflow || maxStdout === 0) return;
    size += d.length;
    if (size > maxStdout) {
      overflow = true;
      proc.signal('SIGKILL', true);
      return;
    }
    out.push(d);
  });
  proc.stderr.on('data', (d: Buffer) => (tail = (tail + d.toString('utf8')).slice(-4000)));
  const kill = () => proc.signal('SIGKILL', true);
  signal?.addEventListener('abort', kill);
  try {
    const exit = await proc.exited;
    return { exitCode: exit.exitCode, stdout: Buffer.concat(out).toString('utf8'), overflow, stderrTail: tail.trim() };
  } finally {
    signal?.removeEventListener('abort', kill);
  }
}

export { GIT_REF } from '../../platform/git-names.js';

/**
 * Clones owner/name through the relay into `dest` in the box, as the box user; `origin` then points at
 * the repository's own address (the grant ends with the clone). `depth` 1 for a survey, full for a mount.
 */
export async function cloneInBox(
  sandbox: Sandbox,
  relay: GitRelay,
  port: number,
  repo: { boxId: string; owner: string; name: string; token: string | null; ref: string | null; dest: string; shallow: boolean },
  signal?: AbortSignal,
): Promise<{ run: BoxRun; grant: CloneGrant }> {
  const { grant, env, url } = relay.grant(repo.boxId, repo.owner, repo.name, repo.token);
  try {
    const script = [
      'set -e',
      'url=$1 dest=$2 origin=$3 ref=$4 depth=$5',
      'set -- clone --quiet --no-tags',
      '[ -n "$depth" ] && set -- "$@" --depth "$depth"',
      '[ -n "$ref" ] && set -- "$@" --branch "$ref"',
      'git "$@" -- "$url" "$dest"',
      'git -C "$dest" remote set-url origin "$origin"',
    ].join('\n');
    const argv = ['sh', '-c', script, 'sh', url(port), repo.dest, relay.upstreamUrl(repo.owner, repo.name), repo.ref ?? '', repo.shallow ? '1' : ''];
    const run = await runInBox(sandbox, { argv, env }, 64 * 1024, signal);
    return { run, grant };
  } finally {
    relay.revoke(grant);
  }
}

/** Why a clone failed, in words, and the inspection status that says so. */
export function cloneFailure(
  run: BoxRun,
  grant: CloneGrant,
  what: string,
): { status: 'repo_authentication_failure' | 'repo_access_failure' | 'inspection_failed'; reason: string } {
  const up = grant.upstreamStatus;
  if (up === 401 || up === 403)
    return {
      status: 'repo_authentication_failure',
      reason: `${what}: the git server refused the credentials (HTTP ${up}); give a token that can read the repository`,
    };
  if (up === 404)
    return { status: 'repo_access_failure', reason: `${what}: the git server has no such repository, or it is private and no token was given (HTTP 404)` };
  if (up === 'unreachable') return { status: 'repo_access_failure', reason: `${what}: the git server could not be reached` };
  if (run.exitCode === 127) return { status: 'inspection_failed', reason: `${what}: the box image has no git` };
  const last = run.stderrTail.split('\n').pop() ?? '';
  return { status: 'inspection_failed', reason: `${what} failed${last ? `: ${last.slice(0, 500)}` : ` (exit status ${run.exitCode})`}` };
}
