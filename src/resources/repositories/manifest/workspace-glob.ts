/**
 * Workspace globs (`packages/*`, `apps/**`, `./libs/x/`) from a repository's own package.json,
 * pnpm-workspace.yaml, Cargo.toml, … matched against its surveyed directories on the host. The repository is
 * untrusted input, so no regular expressions (V8 backtracks exponentially on `^.*a.*a.*a…b$`, which froze the
 * whole process): segments are matched with the blueprints' COPY matcher (stars collapse, one backtrack point),
 * a segment that is exactly `**` matches zero or more whole segments through a memo over (glob segment, path
 * segment), and one glob list spends at most MAX_STEPS, past which it matches nothing more.
 */

import { segmentMatches, tokens, type StepBudget, type Token } from '../../blueprints/index.js';

/** Globs one file may declare (the rest are ignored), each glob's length, and its `**` segments. */
export const MAX_GLOBS = 100;
export const MAX_GLOB_LENGTH = 256;
export const MAX_GLOBSTARS = 4;
/** Steps one glob list may spend against a repository's directories (well under a second). */
export const MAX_STEPS = 5_000_000;

class OutOfSteps extends Error {}

class Budget implements StepBudget {
  private left = MAX_STEPS;
  spend(n: number): void {
    this.left -= n;
    if (this.left < 0) throw new OutOfSteps('workspace globs take too long to match');
  }
}

type Seg = 'globstar' | Token[];

/** A glob as segments, or undefined when it is over the caps (too long, too many `**`). */
function compile(glob: string): Seg[] | undefined {
  if (glob.length > MAX_GLOB_LENGTH || glob.split('**').length - 1 > MAX_GLOBSTARS) return undefined;
  const g = glob.replace(/^(\.\/)+/, '').replace(/\/+$/, '');
  if (!g) return undefined;
  const segs: Seg[] = [];
  for (const s of g.split('/')) {
    if (s === '**') {
      if (segs.at(-1) !== 'globstar') segs.push('globstar');
    } else if (s !== '' && s !== '.') segs.push(tokens(s));
  }
  return segs;
}

/** Whether the path's segments match the glob's, each (glob index, path index) pair tried at most once. */
function matches(segs: Seg[], parts: string[], budget: Budget): boolean {
  const memo = new Map<number, boolean>();
  const go = (i: number, j: number): boolean => {
    if (i === segs.length) return j === parts.length;
    const key = i * (parts.length + 1) + j;
    const seen = memo.get(key);
    if (seen !== undefined) return seen;
    budget.spend(1);
    const s = segs[i]!;
    let r: boolean;
    if (s === 'globstar') r = go(i + 1, j) || (j < parts.length && go(i, j + 1));
    else r = j < parts.length && segmentMatches(s, parts[j]!, budget) && go(i + 1, j + 1);
    memo.set(key, r);
    return r;
  };
  return go(0, 0);
}

/**
 * The directories among `dirs` that a glob list selects (`!glob` excludes). Globs over the caps are ignored;
 * a list that runs out of steps keeps the directories it selected so far.
 */
export function selectDirs(globs: string[], dirs: string[]): string[] {
  const listed = globs.slice(0, MAX_GLOBS);
  const pos = listed
    .filter((g) => !g.startsWith('!'))
    .map(compile)
    .filter((s): s is Seg[] => !!s);
  const neg = listed
    .filter((g) => g.startsWith('!'))
    .map((g) => compile(g.slice(1)))
    .filter((s): s is Seg[] => !!s);
  const budget = new Budget();
  const out: string[] = [];
  try {
    for (const dir of dirs) {
      const parts = dir.split('/');
      if (pos.some((s) => matches(s, parts, budget)) && !neg.some((s) => matches(s, parts, budget))) out.push(dir);
    }
  } catch (e) {
    if (!(e instanceof OutOfSteps)) throw e;
  }
  return out;
}
