/**
 * Builds an image from a Dockerfile without Docker: each instruction that changes the filesystem runs in a
 * real sandbox on the layers before it and leaves one layer; a step whose inputs (parent layer, instruction,
 * expanded arguments and environment, user, directory, context digest) were built before reuses that layer.
 */
import { createHash } from 'node:crypto';
import { posix } from 'node:path';
import type { ResourceLimits, RuntimeDriver, SandboxUser } from '../../runtime/driver.js';
import type { ContextArchive } from './build-context.js';
import { DEFAULT_USER } from '../devboxes/index.js';
import { applyInstruction, SUPPORTED, type BuildInputs, type BuildState, type CodeStep, type LayerStep } from './build-steps.js';
import { DockerfileError, expand, parseDockerfile, splitWords, type Instruction } from './dockerfile.js';
import { COPY_SCRIPT } from './copy-script.js';
import { digestOf } from './context-index.js';
import { ROOT, StepFailed, StepSandboxes, type StepBox, type StepIo, type StepNetwork } from './step-sandbox.js';
import type { ImageConfig } from './types.js';

/** The image a FROM names: its layers and configuration. */
export interface BaseImage {
  layers: string[];
  image: ImageConfig;
  /** The blueprint it is, when it is one. */
  blueprintId: string | null;
}

export interface BuildRequest {
  /** Names the build's sandboxes; unique per run. */
  runId: string;
  dockerfile: string;
  /** Written after the Dockerfile's steps, before the setup commands. */
  fileMounts: Record<string, string>;
  setupCommands: string[];
  /** Cloned after the setup commands, each a step of its own. */
  codeMounts: CodeStep[];
  inputs: BuildInputs;
  limits: ResourceLimits;
  context: ContextArchive | null;
  resolveFrom(ref: string): Promise<BaseImage>;
  /** What the steps' boxes reach (absent: the runtime's default, nothing). */
  network?: StepNetwork;
}

export interface BuildResult {
  layers: string[];
  image: ImageConfig;
  baseBlueprintId: string | null;
  /** Steps run, and steps taken from the cache. */
  built: number;
  cached: number;
}

/** Layers built before, by the digest of their inputs (this node's layers). */
export interface StepCache {
  get(key: string): Promise<string | undefined>;
  put(key: string, layer: string): Promise<void>;
}

export interface BuildLog {
  info(message: string): void;
  error(message: string): void;
}

export class BuildEngine {
  /** Users resolved per parent layer (a build asks again only after a step that may have changed them). */
  private readonly users = new Map<string, SandboxUser>();

  constructor(
    private readonly runtime: RuntimeDriver,
    private readonly cache: StepCache,
  ) {}

  /** Runs the build; a failure throws StepFailed or DockerfileError with a message for the log. */
  async build(req: BuildRequest, log: BuildLog, signal: AbortSignal): Promise<BuildResult> {
    const io: StepIo = { line: (stream, text) => (stream === 'stderr' ? log.error(text) : log.info(text)) };
    const boxes = new StepSandboxes(this.runtime, io, req.network);
    const onAbort = () => void boxes.abort();
    signal.addEventListener('abort', onAbort);
    try {
      return await this.steps(req, log, boxes, signal);
    } finally {
      signal.removeEventListener('abort', onAbort);
      await boxes.abort();
    }
  }

  private async steps(req: BuildRequest, log: BuildLog, boxes: StepSandboxes, signal: AbortSignal): Promise<BuildResult> {
    const all = parseDockerfile(req.dockerfile);
    for (const i of all) if (!SUPPORTED.has(i.keyword)) throw new DockerfileError(`line ${i.line}: unsupported instruction ${i.keyword}`);
    // ARGs before FROM are for FROM; a stage sees them where it declares them again.
    const globals: Record<string, string> = {};
    let at = 0;
    for (; all[at]?.keyword === 'ARG'; at++) {
      for (const w of splitWords(expand(all[at]!.args, globals, { keepQuotes: true }))) {
        const eq = w.indexOf('=');
        const k = eq < 0 ? w : w.slice(0, eq);
        globals[k] = req.inputs.buildArgs[k] ?? (eq < 0 ? '' : w.slice(eq + 1));
      }
    }
    const from = all[at];
    if (!from || from.keyword !== 'FROM') throw new DockerfileError('the Dockerfile must start with FROM (after any ARG)');
    const fromWords = splitWords(expand(from.args, globals, { keepQuotes: true })).filter((w) => !w.startsWith('--platform'));
    if (fromWords.length !== 1 && !(fromWords.length === 3 && fromWords[1]!.toUpperCase() === 'AS')) {
      throw new DockerfileError(`line ${from.line}: FROM takes an image and an optional AS name`);
    }
    const later = all.slice(at + 1).find((i) => i.keyword === 'FROM');
    if (later) throw new DockerfileError(`line ${later.line}: multi-stage builds (a second FROM) are not supported`);
    log.info(`#0 FROM ${fromWords[0]}`);
    const base = await req.resolveFrom(fromWords[0]!);
    const state: BuildState = { layers: [...base.layers], image: structuredClone(base.image), args: {} };
    const inputs: BuildInputs = { ...req.inputs, buildArgs: { ...globals, ...req.inputs.buildArgs } };

    const plan: { ins: Instruction; label: string }[] = all.slice(at + 1).map((ins) => ({ ins, label: `${ins.keyword} ${ins.args}` }));
    for (const [path, contents] of Object.entries(req.fileMounts)) {
      plan.push({ ins: { keyword: 'FILE', args: path, json: null, line: 0 }, label: `file_mount ${path} (${Buffer.byteLength(contents)} bytes)` });
    }
    for (const cmd of req.setupCommands) plan.push({ ins: { keyword: 'RUN', args: cmd, json: null, line: 0 }, label: `RUN ${cmd}` });
    for (const [i, c] of req.codeMounts.entries()) {
      plan.push({
        ins: { keyword: 'CODE', args: String(i), json: null, line: 0 },
        label: `code_mount ${c.repo}${c.ref ? ` at ${c.ref}` : ''} into ~/${c.dir}`,
      });
    }

    let built = 0;
    let cached = 0;
    for (const [n, { ins, label: what }] of plan.entries()) {
      if (signal.aborted) throw new StepFailed('the build was stopped');
      const step: LayerStep | null =
        ins.keyword === 'FILE'
          ? fileStep(ins.args, req.fileMounts[ins.args]!, state.image.workdir)
          : ins.keyword === 'CODE'
            ? await codeStep(req.codeMounts[Number(ins.args)]!, state, inputs, signal)
            : applyInstruction(ins, state, inputs);
      const label = step?.kind === 'code' ? `${what} (commit ${step.commit.slice(0, 12)})` : what;
      const tag = `#${n + 1}`;
      if (!step) {
        log.info(`${tag} ${label}`);
        continue;
      }
      if (step.kind === 'copy' && !req.context) throw new StepFailed(`${label}: no build context was given (build_context)`);
      const key = sha256(
        JSON.stringify([
          state.layers[0] ?? `base:${this.runtime.baseImageName}`,
          step.key,
          step.kind === 'copy' ? digestOf(req.context!.entries, step.sources) : null,
        ]),
      );
      const hit = await this.cache.get(key);
      if (hit && (await this.runtime.layerExists(hit).catch(() => false))) {
        log.info(`${tag} CACHED ${label}`);
        state.layers.unshift(hit);
        cached++;
        continue;
      }
      log.info(`${tag} ${label}`);
      const started = Date.now();
      const user = await this.stepUser(boxes, req, state, step);
      const layer = await boxes.run(`${req.runId}-${n + 1}`, state.layers, req.limits, (box) => this.runStep(box, step, req, label, signal), true, user);
      await this.cache.put(key, layer!);
      state.layers.unshift(layer!);
      built++;
      log.info(`${tag} done in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    }
    if (state.image.user && state.image.user.uid < 0) state.image.user = await this.userOf(boxes, req, state.layers, state.image.user.name);
    return { layers: state.layers, image: state.image, baseBlueprintId: base.blueprintId, built, cached };
  }

  /** RUN as its USER; a code mount as the image's user (whom devboxes from it run as), else the default user; the rest as root. */
  private async stepUser(boxes: StepSandboxes, req: BuildRequest, state: BuildState, step: LayerStep): Promise<SandboxUser> {
    if (step.kind === 'run' && step.user) return this.userOf(boxes, req, state.layers, step.user);
    if (step.kind !== 'code') return ROOT;
    return state.image.user ? this.userOf(boxes, req, state.layers, state.image.user.name) : DEFAULT_USER;
  }

  private async runStep(box: StepBox, step: LayerStep, req: BuildRequest, label: string, signal: AbortSignal): Promise<void> {
    let code: number | null;
    if (step.kind === 'code') return this.runCode(box, step, signal);
    if (step.kind === 'run') code = await box.exec(step.argv, { env: step.env, cwd: step.cwd });
    else if (step.kind === 'mkdir') code = await box.exec(['mkdir', '-p', '--', step.path], {});
    else if (step.kind === 'file')
      code = await box.exec(['sh', '-c', 'mkdir -p -- "$(dirname -- "$1")" && cat > "$1"', 'sh', step.path], { stdin: step.contents });
    else {
      const ctx = req.context!;
      const args = [ctx.gzip ? '1' : '0', step.dest, step.chown ?? '', step.chmod ?? '', ...step.sources];
      code = await box.exec(['sh', '-c', COPY_SCRIPT, 'devboxd-copy', ...args], { stdin: await ctx.open() });
    }
    if (code === 0) return;
    if (await box.oomKilled()) throw new StepFailed(`${label}: killed by the build's memory limit`, 'out_of_memory');
    throw new StepFailed(`${label}: exited with ${code === null ? 'a signal' : `code ${code}`}`);
  }

  /** Clones the repository, pins it at the resolved commit, runs its install command in it (output to the log). */
  private async runCode(box: StepBox, step: Extract<LayerStep, { kind: 'code' }>, signal: AbortSignal): Promise<void> {
    const { mount } = step;
    const at = `code mount ${mount.repo}`;
    const why = await mount.clone(box, signal);
    if (why) throw new StepFailed(`${at}: ${why}`);
    // The ref may have moved since it was resolved: the layer holds the commit its cache key names.
    if ((await box.exec(['git', '-C', mount.dir, 'reset', '-q', '--hard', step.commit], {})) !== 0) {
      throw new StepFailed(`${at}: ${mount.ref ?? 'the default branch'} moved during the build (commit ${step.commit} is gone); build again`);
    }
    if (!step.install) return;
    const code = await box.exec(['bash', '-c', `cd -- "$1" && ${step.install}`, 'bash', mount.dir], { env: step.env });
    if (code === 0) return;
    if (await box.oomKilled()) throw new StepFailed(`${at}: the install command was killed by the build's memory limit`, 'out_of_memory');
    throw new StepFailed(`${at}: the install command exited with ${code === null ? 'a signal' : `code ${code}`}`);
  }

  /**
   * USER (`name`, `uid`, with any `:group`) as a box user, read from the image's /etc/passwd (in a box: the
   * layers are the runtime's). A uid the file lacks is a user of that uid; a name it lacks fails the build.
   */
  private async userOf(boxes: StepSandboxes, req: BuildRequest, layers: string[], spec: string): Promise<SandboxUser> {
    const want = spec.split(':')[0]!;
    if (want === 'root' || want === '0') return ROOT;
    const key = `${layers[0] ?? `base:${this.runtime.baseImageName}`}\0${want}`;
    const known = this.users.get(key);
    if (known) return known;
    if (this.users.size >= 1000) this.users.clear();
    const out: string[] = [];
    await boxes.run(`${req.runId}-user`, layers, req.limits, async (box) => void (await box.exec(['cat', '/etc/passwd'], { out })), false);
    const entry = out.map((l) => l.split(':')).find((f) => f.length >= 3 && (f[0] === want || (/^\d+$/.test(want) && f[2] === want)));
    let user: SandboxUser;
    if (entry && /^[a-z_][a-z0-9_-]{0,31}$/.test(entry[0]!)) user = { name: entry[0]!, uid: Number(entry[2]) };
    else if (/^\d+$/.test(want) && Number(want) <= 65534) user = { name: `user${want}`, uid: Number(want) };
    else throw new StepFailed(`USER ${want}: no such user in the image's /etc/passwd`);
    this.users.set(key, user);
    return user;
  }
}

export const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex');

/** A file mount: a relative path is relative to the image's WORKDIR (else `/`), as COPY's destination is. */
function fileStep(path: string, contents: string, workdir: string | null): LayerStep {
  const abs = posix.resolve(workdir ?? '/', path);
  return { kind: 'file', path: abs, contents, key: ['FILE', abs, sha256(contents)] };
}

/**
 * A code mount's step: its ref resolved to a commit now. The cache key holds the repository, the commit, the
 * install command, the user and the environment the install sees (secrets by digest), never the token.
 */
async function codeStep(mount: CodeStep, s: BuildState, inputs: BuildInputs, signal: AbortSignal): Promise<LayerStep> {
  const { commit, install } = await mount.prepare(signal);
  const env = { ...s.args, ...s.image.env };
  const user = s.image.user?.name ?? DEFAULT_USER.name;
  return {
    kind: 'code',
    mount,
    commit,
    install,
    env: { ...s.args, ...inputs.secrets, ...s.image.env },
    key: ['CODE', mount.repo, mount.dir, commit, install, user, env, inputs.secretDigest],
  };
}
