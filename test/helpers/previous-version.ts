import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT } from './paths.js';

/**
 * The devboxd of the previous landed version, runnable beside this checkout, for the upgrade test
 * (test/api/upgrade.test.ts). Its commit is named in one place, test/fixtures/upgrade/PREVIOUS; the tree is
 * made from git at test time, so the test needs the clone's history (a fresh `git clone` has it all).
 *
 * The tree (node_modules/.cache/devboxd-previous/<commit>, which `npm ci` clears) is a checkout as a server
 * runs it: the commit's package.json, src/ (whose node.proto a server reads at run time), native/ and the
 * scripts/, test/ and bench/ its own build compiles; its native helpers (this checkout's, copied, when native/
 * is the same as the commit's, else built by make); this checkout's node_modules as hard links, so that the
 * API server, which sees its checkout alone (roles/all.ts binds it read-only), finds its packages without a
 * symlink out of its view; and dist/ made by that commit's own scripts/build.mjs. Made once per commit (a few
 * seconds) and kept: another run, or the other database's half, takes it as it is.
 */
export const PREVIOUS_FILE = path.join(ROOT, 'test/fixtures/upgrade/PREVIOUS');

/** The commit PREVIOUS names (its first word; a comment may follow). */
export function previousCommit(): string {
  const commit = fs.readFileSync(PREVIOUS_FILE, 'utf8').trim().split(/\s+/)[0] ?? '';
  if (!/^[0-9a-f]{7,40}$/.test(commit)) throw new Error(`${PREVIOUS_FILE} names no commit: "${commit}"`);
  return commit;
}

// safe.directory: a test run as root in a clone another user owns is still this clone.
const git = (...args: string[]) =>
  execFileSync('git', ['-c', `safe.directory=${ROOT}`, '-C', ROOT, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();

export interface PreviousDevboxd {
  commit: string;
  /** Its one-file entry: what `node <bin> serve` starts (startTestServer's `bin`). */
  bin: string;
}

let made: Promise<PreviousDevboxd> | undefined;

/** The previous version's tree, made the first time it is asked for. */
export function previousDevboxd(): Promise<PreviousDevboxd> {
  made ??= make();
  return made;
}

async function make(): Promise<PreviousDevboxd> {
  let commit: string;
  try {
    commit = git('rev-parse', '--verify', '--quiet', `${previousCommit()}^{commit}`);
  } catch (err) {
    const said = String((err as { stderr?: string }).stderr ?? '').trim();
    throw new Error(
      `the upgrade test starts devboxd as of commit ${previousCommit()} (${path.relative(ROOT, PREVIOUS_FILE)}), which this clone does not hold: ` +
        `a shallow clone? \`git fetch --unshallow\` fetches the history${said ? ` (git: ${said})` : ''}`,
    );
  }
  const dir = path.join(ROOT, 'node_modules/.cache/devboxd-previous', commit);
  const bin = path.join(dir, 'dist/devboxd.js');
  if (fs.existsSync(bin)) return { commit, bin };
  // Made under a name of this process's, then renamed: a run cut short leaves no half tree under the real name.
  const tmp = `${dir}.tmp-${process.pid}`;
  fs.rmSync(tmp, { recursive: true, force: true });
  fs.mkdirSync(tmp, { recursive: true });
  try {
    const parts = ['package.json', 'src', 'native', 'scripts', 'test', 'bench'].filter((p) => git('ls-tree', '--name-only', commit, p) !== '');
    const tar = `${tmp}.tar`;
    git('archive', '-o', tar, commit, ...parts);
    execFileSync('tar', ['-x', '-f', tar, '-C', tmp]);
    fs.rmSync(tar);
    helpers(commit, tmp);
    const modules = fs.readdirSync(path.join(ROOT, 'node_modules')).filter((e) => e !== '.cache');
    fs.mkdirSync(path.join(tmp, 'node_modules'));
    execFileSync('cp', ['-al', ...modules.map((e) => path.join(ROOT, 'node_modules', e)), path.join(tmp, 'node_modules')]);
    execFileSync(process.execPath, [path.join(tmp, 'scripts/build.mjs')], { cwd: tmp, stdio: ['ignore', 'ignore', 'pipe'] });
    try {
      fs.renameSync(tmp, dir);
    } catch (err) {
      // Another process made it meanwhile: theirs is as good.
      if (!fs.existsSync(bin)) throw err;
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  } catch (err) {
    for (const left of [tmp, `${tmp}.tar`]) fs.rmSync(left, { recursive: true, force: true });
    throw err;
  }
  return { commit, bin };
}

/** The commit's native helpers: the ones this checkout built when its native/ is the commit's, else made. */
function helpers(commit: string, tree: string): void {
  const same = (() => {
    try {
      git('diff', '--quiet', commit, '--', 'native');
      return fs.existsSync(path.join(ROOT, 'native/build'));
    } catch {
      return false;
    }
  })();
  if (same) execFileSync('cp', ['-a', path.join(ROOT, 'native/build'), path.join(tree, 'native/build')]);
  else execFileSync('make', ['-s', '-C', path.join(tree, 'native')], { stdio: ['ignore', 'ignore', 'pipe'] });
}
