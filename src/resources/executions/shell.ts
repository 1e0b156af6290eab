/**
 * Named shells behave like one terminal: each command is its own `bash -c`, wrapped so that it starts from
 * the state the previous command of that shell left (working directory and exported variables) and saves
 * its own state on exit, whatever way it exits. The state lives inside the box, so it follows the box's
 * disk (snapshots, suspend) and never crosses boxes. Variables the server hands every process (secrets,
 * tokens) are left out of it: they would otherwise land on the box's disk, and every command gets them anyway.
 */

const STATE_DIR = '/tmp/.devboxd-shells';

// $1 = state file, $2 = the command, $3… = names never saved. The command runs through eval in this very
// shell so `cd`, `export` and `exit` act on it; the EXIT trap saves `export -p` (without the names of $3…)
// and the cwd, and bash keeps the command's status.
const WRAPPER = `__dbx_state=$1; __dbx_cmd=$2; __dbx_omit=("\${@:3}"); set --
if [ -r "$__dbx_state" ]; then . "$__dbx_state" 2>/dev/null; fi
__dbx_save() {
  mkdir -p "\${__dbx_state%/*}" 2>/dev/null
  { (unset -v "\${__dbx_omit[@]}" 2>/dev/null; export -p); printf 'cd -- %q 2>/dev/null\\n' "$PWD"; } > "$__dbx_state.tmp" 2>/dev/null && mv -f -- "$__dbx_state.tmp" "$__dbx_state"
}
trap __dbx_save EXIT
eval "$__dbx_cmd"`;

/**
 * The argv of a command: plain `bash -c` without a shell name, else through the state wrapper, which never
 * saves the variables named in `unsaved`.
 */
export function commandArgv(command: string, shellName: string | null, unsaved: readonly string[] = []): string[] {
  if (shellName === null) return ['bash', '-c', command];
  const state = `${STATE_DIR}/${Buffer.from(shellName).toString('hex')}`;
  return ['bash', '-c', WRAPPER, 'devboxd-shell', state, command, ...unsaved];
}

/** Runs tasks one after another per key (devbox + shell name); tasks on other keys do not wait. */
export class SerialQueues {
  private readonly tails = new Map<string, Promise<void>>();

  /** True when a task on this key is running or waiting. */
  busy(key: string): boolean {
    return this.tails.has(key);
  }

  /** Chains `task` after the key's current tail; `task` errors are the caller's to handle. */
  enqueue(key: string, task: () => Promise<void>): void {
    const prev = this.tails.get(key) ?? Promise.resolve();
    const next = prev.then(task).catch(() => undefined);
    this.tails.set(key, next);
    void next.then(() => {
      if (this.tails.get(key) === next) this.tails.delete(key);
    });
  }
}
