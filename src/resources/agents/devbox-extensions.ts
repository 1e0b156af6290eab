import type { BoxProcess, Sandbox } from '../../runtime/driver.js';
import type { BootContext, BootStep, CreateResolver } from '../devboxes/index.js';
import type { AgentService } from './agent-service.js';
import type { AgentConfig } from './config.js';
import { EXIT_REFUSED, GIT_SCRIPT, NPM_SCRIPT, PIP_SCRIPT } from './install-scripts.js';
import { packageVersion, setupOf } from './source.js';
import { SqlAgentStore } from './sql-agent-store.js';
import type { ResolvedAgentMount } from './types.js';

/** Places a storage object, read as account `owner`, at a path in a booting box; killed at `deadline` (epoch ms). */
export type PlaceObject = (ctx: BootContext, owner: string, objectId: string, path: string, deadline: number) => Promise<void>;

/** What an installer's failure output says when the box could not reach the network. */
const UNREACHABLE =
  /Temporary failure in name resolution|Name or service not known|NewConnectionError|Network is unreachable|ENOTFOUND|EAI_AGAIN|ECONNREFUSED|Could not resolve host|Connection refused|timed out/i;

interface Ran {
  exitCode: number | null;
  /** The last 4000 characters of stderr. */
  stderr: string;
  timedOut: boolean;
}

/** Runs argv in the box, killed (its whole group) at `deadline`; keeps only the tail of stderr. */
async function run(sandbox: Sandbox, argv: string[], env: Record<string, string>, deadline: number): Promise<Ran> {
  const proc: BoxProcess = sandbox.spawn({ argv, env });
  let stderr = '';
  proc.stderr.on('data', (d: Buffer) => (stderr = (stderr + d.toString('utf8')).slice(-4000)));
  proc.stdout.resume();
  proc.stdin.end();
  let timedOut = false;
  const timer = setTimeout(
    () => {
      timedOut = true;
      proc.signal('SIGKILL', true);
    },
    Math.max(0, deadline - Date.now()),
  );
  try {
    const exit = await proc.exited;
    return { exitCode: exit.exitCode, stderr, timedOut };
  } finally {
    clearTimeout(timer);
  }
}

const lastLine = (s: string) => s.trim().split('\n').pop()?.trim() ?? '';

/** The argv that installs a package or git agent (object agents go through the object mount step). */
function installArgv(m: ResolvedAgentMount): string[] {
  const s = m.agent.source!;
  const version = packageVersion(s, m.agent.version);
  const path = m.agentPath ?? '';
  if (s.npm) return ['bash', '-c', NPM_SCRIPT, 'bash', path, version ? `${s.npm.package_name}@${version}` : s.npm.package_name, s.npm.registry_url ?? ''];
  if (s.pip) {
    const spec = !version ? s.pip.package_name : /^[<>=!~]/.test(version) ? `${s.pip.package_name}${version}` : `${s.pip.package_name}==${version}`;
    return ['bash', '-c', PIP_SCRIPT, 'bash', path, spec, s.pip.registry_url ?? ''];
  }
  return ['bash', '-c', GIT_SCRIPT, 'bash', s.git!.repository, path, s.git!.ref ?? ''];
}

/**
 * A token for a private repository as git configuration in the environment: in no argument, no file. git
 * sends an extraHeader to whatever host a redirect moves it to (scoping the key to the URL does not help),
 * so with a token redirects are not followed at all.
 */
export const gitAuthEnv = (token: string | null): Record<string, string> =>
  token
    ? {
        GIT_CONFIG_COUNT: '2',
        GIT_CONFIG_KEY_0: 'http.extraHeader',
        GIT_CONFIG_VALUE_0: `Authorization: Basic ${Buffer.from(`x-access-token:${token}`).toString('base64')}`,
        GIT_CONFIG_KEY_1: 'http.followRedirects',
        GIT_CONFIG_VALUE_1: 'false',
      }
    : {};

/** git's message when it met a redirect it was told not to follow. */
const REDIRECTED = /returned error: 30[1278]/;

/**
 * Agent mounts in a devbox's `mounts`: the resolver refuses a create whose agents the account cannot use
 * (400, naming the mount) and records each resolved agent with the box; the boot step installs them, in
 * order, before launch commands run, all within DEVBOXD_AGENT_INSTALL_TIMEOUT. A failing install ends the
 * box in `failure` with a reason that names the agent.
 */
export function agentMountExtensions(
  agents: () => AgentService,
  placeObject: PlaceObject,
  config: AgentConfig,
): { resolver: CreateResolver; bootStep: BootStep } {
  const resolver: CreateResolver = async (accountId, input) => {
    const resolved: ResolvedAgentMount[] = [];
    for (const m of input.agentMounts ?? []) resolved.push(await agents().resolveMount(accountId, m, `mounts[${m.index}]`));
    if (!resolved.length) return undefined;
    return { persist: (tx, d) => new SqlAgentStore(tx.db).insertMounts(accountId, d.id, resolved) };
  };

  async function install(ctx: BootContext, m: ResolvedAgentMount, authToken: string | null, deadline: number): Promise<void> {
    const { agent } = m;
    const label = `agent "${agent.name}" (${agent.id}, ${agent.source!.type})`;
    const env = { ...ctx.devbox.environment };
    const late = (what: string) =>
      new Error(`${label}: ${what} did not finish within ${config.installTimeoutSeconds} s (DEVBOXD_AGENT_INSTALL_TIMEOUT, for all of the box's agent mounts)`);
    const fail = (r: Ran, what: string): Error => {
      if (r.timedOut) return late(what);
      if (authToken && REDIRECTED.test(r.stderr))
        return new Error(
          `${label}: ${what} failed: the repository redirected, and a clone with auth_token follows no redirect: give the agent the repository's final URL`,
        );
      const why = lastLine(r.stderr) || `exit status ${r.exitCode}`;
      const net =
        r.exitCode !== EXIT_REFUSED && UNREACHABLE.test(r.stderr) ? ' (the box could not reach it: its network policy may allow no egress there)' : '';
      return new Error(`${label}: ${what} failed: ${why}${net}`);
    };
    const source = agent.source!;
    if (source.object) {
      await placeObject(ctx, agent.accountId, source.object.object_id, m.agentPath!, deadline).catch((err: Error) => {
        throw Date.now() >= deadline ? late(`placing object ${source.object!.object_id}`) : new Error(`${label}: ${err.message}`);
      });
    } else {
      const r = await run(ctx.sandbox, installArgv(m), { ...env, ...gitAuthEnv(authToken) }, deadline);
      if (r.exitCode !== 0) throw fail(r, source.git ? `cloning ${source.git.repository}` : 'installing');
    }
    for (const command of setupOf(source)) {
      // Setup runs in the agent's directory when it is one, else in the home directory.
      const argv = ['bash', '-c', '[ -d "$1" ] && cd -- "$1"; exec bash -c "$2"', 'bash', m.agentPath ?? '', command];
      const r = await run(ctx.sandbox, argv, env, deadline);
      if (r.exitCode !== 0) throw fail(r, `agent_setup command "${command}"`);
    }
  }

  const bootStep: BootStep = {
    name: 'agent mounts',
    applies: (ctx) => !ctx.resuming && ctx.agentMounts.length > 0,
    async run(ctx) {
      // One deadline for the whole step: a box's many mounts cannot keep it provisioning for hours.
      const deadline = Date.now() + config.installTimeoutSeconds * 1000;
      const mounts = await agents().store.mountsOf(ctx.devbox.id);
      for (const [i, m] of mounts.entries()) await install(ctx, m, ctx.agentMounts[i]?.authToken ?? null, deadline);
    },
  };
  return { resolver, bootStep };
}
