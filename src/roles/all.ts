/**
 * DEVBOXD_ROLE=all: the node agent and the API server on this host, as two processes started and stopped
 * together. This process stays root only to start them: it parses nothing of a tenant's and serves nothing.
 *
 * - the agent: root, `devboxd serve` with DEVBOXD_ROLE=node;
 * - the API server: the API user, no capabilities (permitted, effective, inheritable, ambient and bounding
 *   sets empty), `no_new_privs`, in a mount namespace of its own (layout.ts), with DEVBOXD_ROLE=api.
 *
 * Both die with this process (a parent-death signal), so a supervisor that is killed leaves no server behind
 * holding the port; the boxes live on, as with one process, and the next start adopts them. One of the two
 * ending on its own ends the other: a service manager restarts the whole.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import type { Config } from '../config.js';
import { INSTALL_ROOT } from '../lib/install-root.js';
import { ConfigError } from '../platform/config-error.js';
import { handFiles, lookupUser, prepareLayout, VIEW } from './layout.js';

/** Binds the API server's view, then drops to its user; runs as root in the new mount namespace. */
const API_LAUNCH = String.raw`set -e
view=$1 app=$2 data=$3 uid=$4 gid=$5; shift 5
mount -t tmpfs -o mode=0755,size=64k,nosuid,nodev devboxd-view "$view"
mkdir "$view/app" "$view/data"
mount --bind "$app" "$view/app"
mount -o remount,bind,ro,nosuid,nodev "$view/app"
mount --bind "$data" "$view/data"
# The namespace began as a copy of the host's mounts: the boxes' disks and layers (loop devices) of every
# server on the host among them. Copies left here would hold those filesystems busy after the agent unmounts
# them (their loop devices could not be detached, their data dirs not removed): they go, but for this
# server's own (a data dir on a loop device is bound above).
# One umount for all of them: with a few servers on the host they are a hundred or more, and a process for
# each took seconds of every start. mountinfo writes a space as \040, which dash's printf %b reads as \0NNN.
sed -n 's/^[^ ]* [^ ]* [^ ]* [^ ]* \([^ ]*\) .* - [^ ]* \/dev\/loop[0-9]* .*/\1/p' /proc/self/mountinfo | grep -v "^$view/" |
  sed 's/\\\([0-7][0-7][0-7]\)/\\0\1/g' | sort -r | {
  set --
  while read -r m; do set -- "$@" "$(printf '%b' "$m")"; done
  [ $# -eq 0 ] || umount -l "$@" 2>/dev/null || true
}
cd "$view/data"
exec setpriv --reuid="$uid" --regid="$gid" --clear-groups --no-new-privs --inh-caps=-all --ambient-caps=-all --bounding-set=-all --pdeathsig=SIGKILL -- "$@"`;

export interface RunningAll {
  /** Resolves with the exit code once both processes ended. */
  exited: Promise<number>;
  /** Stops both (the API server first); resolves as `exited`. */
  stop(): Promise<number>;
}

export function startAll(config: Config): RunningAll {
  if (process.getuid?.() !== 0) {
    throw new ConfigError('DEVBOXD_ROLE=all starts the node agent, which runs sandboxes and needs root: run devboxd as root');
  }
  const user = lookupUser(config.roles.apiUser);
  const layout = prepareLayout(config.dataDir, user);
  const script = process.argv[1];
  if (!script || path.relative(INSTALL_ROOT, script).startsWith('..')) throw new Error(`devboxd runs from ${script}, outside its checkout ${INSTALL_ROOT}`);
  // The settings' environment, not the process's: it holds what a config file set (the children read no file).
  const shared = {
    ...config.env,
    // One token per start unless the operator set one: only these two processes know it.
    DEVBOXD_CLUSTER_TOKEN: config.roles.token ?? randomBytes(32).toString('hex'),
    DEVBOXD_NODE_URL: config.env.DEVBOXD_NODE_URL || `unix:${layout.agentSocket}`,
  };
  const node = spawn('setpriv', ['--pdeathsig=SIGKILL', '--', process.execPath, ...process.execArgv, script, 'serve'], {
    env: { ...shared, DEVBOXD_ROLE: 'node' },
    stdio: 'inherit',
    // Sessions of their own: a terminal's ^C reaches this process alone, which stops them in order.
    detached: true,
  });
  const viewScript = path.join(VIEW, 'app', path.relative(INSTALL_ROOT, script));
  const apiArgs = [String(user.uid), String(user.gid), process.execPath, ...process.execArgv, viewScript, 'serve'];
  const api = spawn('unshare', ['--mount', '--propagation', 'private', '--', 'sh', '-c', API_LAUNCH, 'sh', VIEW, INSTALL_ROOT, layout.apiDir, ...apiArgs], {
    env: {
      ...shared,
      DEVBOXD_ROLE: 'api',
      DEVBOXD_DATA_DIR: path.join(VIEW, 'data'),
      // The base image cache stays the agent's: the API server only names it.
      DEVBOXD_IMAGE_DIR: config.imageDir,
      DEVBOXD_BOX_SERVICES_DIR: layout.boxServicesDir,
      DEVBOXD_HOST_DATA_DIR: layout.apiDir,
      HOME: path.join(VIEW, 'data'),
      ...handFiles(config.env, layout.apiDir, user),
    },
    stdio: 'inherit',
    detached: true,
  });
  return supervise(node, api);
}

function supervise(node: ChildProcess, api: ChildProcess): RunningAll {
  const ended = (c: ChildProcess) =>
    new Promise<number>((resolve) => {
      c.once('error', () => resolve(1));
      c.once('exit', (code, signal) => resolve(code ?? (signal ? 128 : 1)));
    });
  const nodeEnded = ended(node);
  const apiEnded = ended(api);
  // The status of the one that ended on its own (the other was stopped for it), else of either.
  let cause: Promise<number> | undefined;
  const exited = Promise.all([apiEnded, nodeEnded]).then(async ([a, n]) => (cause ? await cause : 0) || a || n);
  let stopping = false;
  // The API server drains first (it may suspend boxes through the agent), then the agent stops.
  const stop = () => {
    if (!stopping) {
      stopping = true;
      api.kill('SIGTERM');
      void apiEnded.then(() => node.kill('SIGTERM'));
    }
    return exited;
  };
  void nodeEnded.then(() => {
    if (!stopping) {
      process.stderr.write('devboxd: the node agent ended: stopping the API server\n');
      cause = nodeEnded;
    }
    stopping = true;
    api.kill('SIGTERM');
  });
  void apiEnded.then(() => {
    if (!stopping) {
      process.stderr.write('devboxd: the API server ended: stopping the node agent\n');
      cause = apiEnded;
    }
    stopping = true;
    node.kill('SIGTERM');
  });
  return { exited, stop };
}
