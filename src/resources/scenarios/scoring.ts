import type { Sandbox } from '../../runtime/driver.js';
import type { BoxJobs } from '../executions/index.js';
import { tailBytes, utf8Start } from '../executions/index.js';
import type { Devbox } from '../devboxes/index.js';
import { AST_GREP_SCRIPT, ensureAstGrep } from './ast-grep.js';
import { pythonProgram } from './python-scorer.js';
import type { CustomScorer } from './scorer-service.js';
import type { Scenario, ScenarioRun, Scorer, ScoringContractResult, ScoringFunctionResult } from './types.js';

/** Output kept per scoring function (its last bytes): shown on every read of the run. */
export const SCORER_OUTPUT_MAX_BYTES = 8 * 1024;
/** Exit status the script prefix uses when the working directory is missing (with `noWorkdir` as stderr's last line). */
const NO_WORKDIR = 97;
const noWorkdir = (workdir: string) => `devboxd: working directory ${workdir} does not exist`;

/** What scoring needs of the platform: the box's process environment and its custom scorers. */
export interface ScoringContext {
  devbox: Devbox;
  sandbox: Sandbox;
  env: Record<string, string>;
  customScorer(type: string): Promise<CustomScorer | undefined>;
}

/**
 * Runs a scenario's scoring functions in the run's box, one after another, as box jobs, within the scenario's
 * scorer timeout (for all of them together), and weighs their scores. A function that prints no score, one
 * outside [0, 1], exits non-zero or runs out of time is `error` with score 0 and its output kept; command
 * and test-based functions score 1 on exit status 0 and 0 otherwise.
 */
export async function scoreRun(jobs: BoxJobs, run: ScenarioRun, scenario: Scenario, ctx: ScoringContext): Promise<ScoringContractResult> {
  const deadline = Date.now() + scenario.scorerTimeoutSec * 1000;
  const functions: ScoringFunctionResult[] = [];
  for (const f of scenario.scoringFunctions) {
    const left = deadline - Date.now();
    if (left <= 0) {
      functions.push({ name: f.name, score: 0, state: 'error', output: `not run: the scenario's scorer_timeout_sec (${scenario.scorerTimeoutSec}) ran out` });
      continue;
    }
    const program = await programOf(f.scorer, scenario, run, ctx);
    if (typeof program === 'string') {
      functions.push({ name: f.name, score: 0, state: 'error', output: program });
      continue;
    }
    const out = await runJob(jobs, ctx, program, left);
    functions.push({ name: f.name, ...judge(program.kind, out, left) });
  }
  const total = scenario.scoringFunctions.reduce((s, f) => s + f.weight, 0);
  const weighted = scenario.scoringFunctions.reduce((s, f, i) => s + f.weight * functions[i]!.score, 0);
  return { score: Math.min(1, Math.max(0, weighted / total)), functions };
}

interface Program {
  /** `score`: prints its score; `exit`: exit status 0 passes. */
  kind: 'score' | 'exit';
  argv: string[];
  env: Record<string, string>;
  /** Text written to the process's stdin, then EOF (a script too large for one argument). */
  stdin?: string;
  /** The scenario's working directory, which the script enters first. */
  workdir: string | null;
}

interface JobOutcome {
  exitStatus: number | null;
  timedOut: boolean;
  /** The process was spawned (false: it could not start). */
  started: boolean;
  output: string;
  lastStdoutLine: string | null;
  /** The script's prologue found no working directory (its exit status and message, not a test's own 97). */
  noWorkdir: boolean;
}

const quote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;

/** A bash prologue that enters the scenario's working directory (relative paths from home). */
function enter(workdir: string | null): string {
  if (!workdir) return '';
  return `cd -- ${quote(workdir)} 2>/dev/null || { printf '%s\\n' ${quote(noWorkdir(workdir))} >&2; exit ${NO_WORKDIR}; }\n`;
}

async function programOf(s: Scorer, scenario: Scenario, run: ScenarioRun, ctx: ScoringContext): Promise<Program | string> {
  const wd = scenario.environment?.workingDirectory || null;
  const env = { ...ctx.env, RUNLOOP_SCENARIO_ID: scenario.id, RUNLOOP_SCENARIO_RUN_ID: run.id };
  const bash = (kind: Program['kind'], script: string, extra: Record<string, string> = {}): Program => ({
    kind,
    argv: ['bash', '-c', enter(wd) + script],
    env: { ...env, ...extra },
    workdir: wd,
  });
  switch (s.type) {
    case 'bash_script_scorer':
      return bash('score', s.bash_script);
    case 'command_scorer':
      return bash('exit', s.command);
    case 'python_script_scorer':
      return { kind: 'score', argv: ['bash', '-c', enter(wd) + pythonProgram(s), 'devboxd-scorer', s.python_script], env, workdir: wd };
    case 'test_based_scorer': {
      // Each file travels base64-encoded: no quoting of its contents can go wrong. Files and command together
      // can pass the kernel's 128 KiB per argument, so the script goes through stdin (read whole, then run
      // with stdin at /dev/null: the tests do not read the rest of their own script).
      const writes = s.test_files
        .map(
          (f) =>
            `mkdir -p -- "$(dirname -- ${quote(f.file_path)})" && printf %s ${quote(Buffer.from(f.file_contents).toString('base64'))} | base64 -d > ${quote(f.file_path)} || exit 1\n`,
        )
        .join('');
      return { kind: 'exit', argv: ['bash', '-c', 'eval "$(cat)" </dev/null'], env, stdin: enter(wd) + writes + s.test_command, workdir: wd };
    }
    case 'ast_grep_scorer': {
      const missing = await ensureAstGrep(ctx.sandbox);
      if (missing) return missing;
      return {
        kind: 'score',
        argv: ['bash', '-c', enter(wd) + AST_GREP_SCRIPT, 'devboxd-scorer', s.pattern, s.search_directory, s.lang ?? ''],
        env,
        workdir: wd,
      };
    }
    case 'custom_scorer': {
      // A public scenario's custom scorers are its owner's.
      const custom = await ctx.customScorer(s.custom_scorer_type);
      if (!custom) return `custom scorer ${s.custom_scorer_type} no longer exists`;
      return bash('score', custom.bashScript, { RUNLOOP_SCORER_PARAMS: JSON.stringify(s.scorer_params ?? null) });
    }
  }
}

/**
 * Runs one program to its end or the time left. Its score line and kept output are read from the job's whole
 * stored output once it ended (never from the capped, sampled log feed): the end of stdout, then of stderr.
 */
async function runJob(jobs: BoxJobs, ctx: ScoringContext, p: Program, timeoutMs: number): Promise<JobOutcome> {
  const job = jobs.create(ctx.devbox.id);
  let timedOut = false;
  let timer: NodeJS.Timeout | undefined;
  const arm = () => {
    // Armed once the process exists, so the kill always reaches it.
    timer = setTimeout(() => {
      timedOut = true;
      job.signal('SIGKILL', true);
    }, timeoutMs);
  };
  if (p.stdin !== undefined) {
    job.stdin({ text: p.stdin });
    job.stdin({ eof: true });
  }
  const exitStatus = await job
    .run(ctx.sandbox, { argv: p.argv, env: p.env, attachStdin: p.stdin !== undefined, onSpawned: arm })
    .catch(() => null)
    .finally(() => clearTimeout(timer));
  job.complete(exitStatus);
  job.bump();
  await job.closed;
  const bytes = job.bytes() ?? { stdout: 0, stderr: 0 };
  const [out, err] = await Promise.all([
    tailBytes(job.output('stdout'), bytes.stdout, SCORER_OUTPUT_MAX_BYTES),
    tailBytes(job.output('stderr'), bytes.stderr, SCORER_OUTPUT_MAX_BYTES),
  ]);
  const noWd = p.workdir !== null && exitStatus === NO_WORKDIR && lastLine(err.text, err.whole) === noWorkdir(p.workdir).trim();
  return { exitStatus, timedOut, started: job.started, output: keptOutput(out.text, err.text), lastStdoutLine: lastLine(out.text, out.whole), noWorkdir: noWd };
}

/** The last non-blank line of a stdout tail; null when there is none or it may be cut (it starts before the tail). */
function lastLine(text: string, whole: boolean): string | null {
  const body = text.replace(/\s+$/, '');
  const nl = body.lastIndexOf('\n');
  if (!body || (nl < 0 && !whole)) return null;
  return body.slice(nl + 1).trim();
}

/** The end of stdout then the end of stderr, SCORER_OUTPUT_MAX_BYTES together (each gets at least half if it needs it). */
function keptOutput(stdout: string, stderr: string): string {
  const max = SCORER_OUTPUT_MAX_BYTES;
  const [o, e] = [Buffer.from(stdout.replace(/\n$/, '')), Buffer.from(stderr.replace(/\n$/, ''))];
  const eKeep = Math.min(e.length, Math.max(max / 2, max - o.length - 1));
  const oKeep = Math.min(o.length, max - eKeep - (eKeep > 0 ? 1 : 0));
  const end = (b: Buffer, n: number) => b.toString('utf8', utf8Start(b, b.length - n));
  return [end(o, oKeep), end(e, eKeep)].filter(Boolean).join('\n');
}

const SCORE = /^(?:score\s*[=:]\s*)?([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)$/i;

function judge(kind: Program['kind'], o: JobOutcome, timeoutMs: number): Omit<ScoringFunctionResult, 'name'> {
  const error = (why: string) => ({ score: 0, state: 'error' as const, output: o.output ? `${o.output}\n${why}` : why });
  if (o.timedOut) return error(`devboxd: the scorer ran out of time (${Math.ceil(timeoutMs / 1000)} s left of the scenario's scorer_timeout_sec)`);
  if (!o.started) return error('devboxd: the scorer could not start');
  if (kind === 'exit') {
    if (o.exitStatus === null) return error('devboxd: the scorer was killed (no exit status)');
    // A test's own exit 97 is a failing test; only the prologue's (its message last on stderr) is an error.
    if (o.noWorkdir) return error(`devboxd: exit status ${NO_WORKDIR}`);
    return { score: o.exitStatus === 0 ? 1 : 0, state: 'complete', output: o.output };
  }
  if (o.exitStatus !== 0) return error(`devboxd: the scorer exited with status ${o.exitStatus ?? 'unknown (killed)'}`);
  const m = o.lastStdoutLine === null ? null : SCORE.exec(o.lastStdoutLine);
  if (!m) return error('devboxd: the scorer printed no score (its last line of output must be a number in [0, 1], or score=<number>)');
  const score = Number(m[1]);
  if (!(score >= 0 && score <= 1)) return error(`devboxd: the score ${m[1]} is outside [0, 1]`);
  return { score, state: 'complete', output: o.output };
}
