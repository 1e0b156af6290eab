import ssh2, { type ParsedKey } from 'ssh2';

const { utils } = ssh2;
import type { Sandbox } from '../../runtime/driver.js';

/** The most of `authorized_keys` read at a connect (a box user could make it any size). */
const MAX_BYTES = 256 * 1024;
/** A box that does not answer a key read (or install) in this long is treated as failing. */
const BOX_TIMEOUT_MS = 10_000;
const STDERR_KEEP = 2048;

/**
 * Both scripts run as the box user inside the box (its own mount namespace and permissions), so `~/.ssh` and
 * any link in it resolve inside the box; the host never opens a path the box controls.
 *
 * INSTALL: $1 = the public key line. Creates `~/.ssh` (0700) and appends the line to `authorized_keys` (0600),
 * on a line of its own.
 */
const INSTALL = `
set -e
umask 077
cd "$HOME"
[ -d .ssh ] || mkdir .ssh
chmod 700 .ssh
f=.ssh/authorized_keys
if [ -s "$f" ] && [ -n "$(tail -c 1 -- "$f")" ]; then echo >> "$f"; fi
printf '%s\\n' "$1" >> "$f"
chmod 600 "$f"
`;

const READ = `f="$HOME/.ssh/authorized_keys"; [ -f "$f" ] && [ -r "$f" ] || exit 0; exec head -c ${MAX_BYTES} -- "$f"`;

/** Key types a line may start with; a line starting otherwise carries options (`command=`, `from=`, ...). */
const KEY_TYPE = /^(ssh-(ed25519|rsa|dss)|ecdsa-sha2-nistp(256|384|521)|sk-(ssh-ed25519|ecdsa-sha2-nistp256)@openssh\.com)$/;

/**
 * The keys of an `authorized_keys` text. Lines with options are left out: devboxd does not enforce them,
 * and a key meant to be restricted must not get a full shell; so are comments and lines it cannot parse.
 */
export function parseAuthorizedKeys(text: string): ParsedKey[] {
  const keys: ParsedKey[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#') || !KEY_TYPE.test(line.split(/\s+/)[0]!)) continue;
    const key = utils.parseKey(line);
    if (!(key instanceof Error) && !Array.isArray(key)) keys.push(key);
  }
  return keys;
}

/** Appends a public key line to the box user's `~/.ssh/authorized_keys`; rejects with the box's message. */
export async function installKey(sandbox: Sandbox, publicLine: string): Promise<void> {
  const { code, stderr } = await runInBox(sandbox, ['sh', '-c', INSTALL, 'sh', publicLine]);
  if (code !== 0) throw new Error(stderr.trim().split('\n').slice(-2).join('; ') || `exit status ${code}`);
}

/** The keys the box user authorizes now (read at each connect, so a removed line stops working at once). */
export async function authorizedKeys(sandbox: Sandbox): Promise<ParsedKey[]> {
  const { code, stdout } = await runInBox(sandbox, ['sh', '-c', READ]);
  return code === 0 ? parseAuthorizedKeys(stdout) : [];
}

async function runInBox(sandbox: Sandbox, argv: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const proc = sandbox.spawn({ argv });
  proc.stdin.end();
  let stdout = '';
  let stderr = '';
  proc.stdout.on('data', (c: Buffer) => {
    if (stdout.length < MAX_BYTES) stdout += c.toString('utf8');
  });
  proc.stderr.on('data', (c: Buffer) => {
    if (stderr.length < STDERR_KEEP) stderr += c.toString('utf8');
  });
  const timer = setTimeout(() => proc.signal('SIGKILL', true), BOX_TIMEOUT_MS);
  const exit = await proc.exited;
  clearTimeout(timer);
  // The pipes close right after the exit; what they still held is wanted.
  await Promise.all([closed(proc.stdout), closed(proc.stderr)]);
  return { code: exit.exitCode, stdout: stdout.slice(0, MAX_BYTES), stderr };
}

function closed(stream: NodeJS.ReadableStream): Promise<void> {
  return new Promise((resolve) => {
    if ((stream as { readableEnded?: boolean }).readableEnded || (stream as { destroyed?: boolean }).destroyed) return resolve();
    const timer = setTimeout(resolve, 300);
    const done = () => {
      clearTimeout(timer);
      resolve();
    };
    stream.once('end', done);
    stream.once('close', done);
  });
}
