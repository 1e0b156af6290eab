/**
 * What each Dockerfile instruction does to the build's state. Instructions that only describe the image
 * (ENV, ARG, LABEL, USER, EXPOSE, ENTRYPOINT, CMD, SHELL) change the state; those that change the filesystem
 * (RUN, COPY/ADD, WORKDIR's directory) become a layer step, run by the engine in a sandbox.
 */
import { posix } from 'node:path';
import { DockerfileError, expand, parsePairs, splitWords, type Instruction } from './dockerfile.js';
import type { StepBox } from './step-sandbox.js';
import type { ImageConfig } from './types.js';

export interface BuildState {
  /** Image layers so far, newest first (the default image lies under them). */
  layers: string[];
  image: ImageConfig;
  /** ARGs declared in this stage, with their values. */
  args: Record<string, string>;
}

/** A step that writes a layer. `key` names its inputs for the cache (the engine adds the parent layer). */
export type LayerStep =
  | { kind: 'run'; argv: string[]; env: Record<string, string>; user: string | null; cwd: string; key: unknown }
  | { kind: 'copy'; sources: string[]; dest: string; chown: string | null; chmod: string | null; key: unknown }
  | { kind: 'mkdir'; path: string; key: unknown }
  | { kind: 'file'; path: string; contents: string; key: unknown }
  | { kind: 'code'; mount: CodeStep; commit: string; install: string | null; env: Record<string, string>; key: unknown };

/** A blueprint's code mount as a build step (made by the build runner, which reaches the repositories). */
export interface CodeStep {
  /** `owner/name`, what the log and failures name. */
  repo: string;
  /** The directory under the user's home (the repository's name). */
  dir: string;
  ref: string | null;
  /** The commit the ref names now and the install command (the mount's, else the repository's manifest's). */
  prepare(signal: AbortSignal): Promise<{ commit: string; install: string | null }>;
  /** Clones into `~/<dir>` of the step box's user; resolves null, or why it failed. */
  clone(box: StepBox, signal: AbortSignal): Promise<string | null>;
}

/** Instructions this builder runs; any other fails the build, naming it. */
export const SUPPORTED = new Set(['FROM', 'RUN', 'ENV', 'ARG', 'WORKDIR', 'USER', 'COPY', 'ADD', 'LABEL', 'EXPOSE', 'ENTRYPOINT', 'CMD', 'SHELL']);

/** The variables instructions expand with: declared ARGs, then ENV over them (as in Docker). */
export const varsOf = (s: BuildState): Record<string, string> => ({ ...s.args, ...s.image.env });

/** Build args the request gave (build_args, secrets): what `ARG NAME` without a default picks up. */
export interface BuildInputs {
  buildArgs: Record<string, string>;
  /** Secrets by variable name: given to every RUN, never kept in the image or the cache key in clear. */
  secrets: Record<string, string>;
  /** Their digests, for cache keys. */
  secretDigest: string;
}

/** Applies one non-FROM instruction: resolves the state change and the layer step it needs, if any. */
export function applyInstruction(ins: Instruction, s: BuildState, inputs: BuildInputs): LayerStep | null {
  const vars = varsOf(s);
  const img = s.image;
  switch (ins.keyword) {
    case 'ENV':
      for (const [k, v] of parsePairs(ins.args, vars, 'ENV')) img.env[k] = v;
      return null;
    case 'ARG':
      for (const word of splitWords(expand(ins.args, vars, { keepQuotes: true }))) {
        const eq = word.indexOf('=');
        const k = eq < 0 ? word : word.slice(0, eq);
        if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(k)) throw new DockerfileError(`line ${ins.line}: ARG ${k} is not a valid name`);
        const given = Object.hasOwn(inputs.buildArgs, k) ? inputs.buildArgs[k] : inputs.secrets[k];
        s.args[k] = given ?? (eq < 0 ? (s.args[k] ?? '') : word.slice(eq + 1));
      }
      return null;
    case 'LABEL':
      for (const [k, v] of parsePairs(ins.args, vars, 'LABEL')) img.labels[k] = v;
      return null;
    case 'EXPOSE':
      img.exposedPorts.push(...splitWords(expand(ins.args, vars, { keepQuotes: true })));
      return null;
    case 'USER': {
      const user = expand(ins.args, vars).trim();
      if (!user || /\s/.test(user)) throw new DockerfileError(`line ${ins.line}: USER needs one user name or uid`);
      img.user = { name: user, uid: -1 };
      return null;
    }
    case 'SHELL':
      if (!ins.json || ins.json.length === 0) throw new DockerfileError(`line ${ins.line}: SHELL must be a JSON array, e.g. ["/bin/bash", "-c"]`);
      img.shell = ins.json;
      return null;
    case 'ENTRYPOINT':
      img.entrypoint = ins.json ?? [...img.shell, ins.args];
      img.cmd = null; // as in Docker: a new ENTRYPOINT drops an inherited CMD
      return null;
    case 'CMD':
      img.cmd = ins.json ?? [...img.shell, ins.args];
      return null;
    case 'WORKDIR': {
      const dir = expand(ins.args, vars).trim();
      if (!dir) throw new DockerfileError(`line ${ins.line}: WORKDIR needs a path`);
      img.workdir = posix.resolve(img.workdir ?? '/', dir);
      return { kind: 'mkdir', path: img.workdir, key: ['WORKDIR', img.workdir] };
    }
    case 'RUN': {
      const argv = ins.json ?? [...img.shell, ins.args];
      if (argv.length === 0 || (!ins.json && !ins.args)) throw new DockerfileError(`line ${ins.line}: RUN needs a command`);
      // ARG values reach RUN through its environment, ENV over them; secrets too, outside the image.
      const env = { ...s.args, ...inputs.secrets, ...img.env };
      const user = img.user?.name ?? null;
      const cwd = img.workdir ?? '/';
      return { kind: 'run', argv, env, user, cwd, key: ['RUN', argv, { ...s.args, ...img.env }, user, cwd, inputs.secretDigest] };
    }
    case 'COPY':
    case 'ADD':
      return copyStep(ins, s, vars);
    default:
      throw new DockerfileError(`line ${ins.line}: unsupported instruction ${ins.keyword}`);
  }
}

function copyStep(ins: Instruction, s: BuildState, vars: Record<string, string>): LayerStep {
  let words = ins.json ?? splitWords(expand(ins.args, vars, { keepQuotes: true }));
  let chown: string | null = null;
  let chmod: string | null = null;
  while (words[0]?.startsWith('--')) {
    const flag = words.shift()!;
    const [name, value] = [flag.slice(2, flag.includes('=') ? flag.indexOf('=') : undefined), flag.includes('=') ? flag.slice(flag.indexOf('=') + 1) : ''];
    if (name === 'chown') chown = value;
    else if (name === 'chmod') chmod = value;
    else if (name === 'link') continue;
    else if (name === 'from') throw new DockerfileError(`line ${ins.line}: ${ins.keyword} --from (multi-stage builds) is not supported`);
    else throw new DockerfileError(`line ${ins.line}: ${ins.keyword} --${name} is not supported`);
  }
  if (ins.json) words = words.map((w) => expand(w, vars));
  if (words.length < 2) throw new DockerfileError(`line ${ins.line}: ${ins.keyword} needs a source and a destination`);
  const dest0 = words.pop()!;
  for (const src of words) {
    if (/^[a-z]+:\/\//i.test(src)) throw new DockerfileError(`line ${ins.line}: ${ins.keyword} from a URL is not supported (the build reaches no network)`);
    if (src.split('/').includes('..')) throw new DockerfileError(`line ${ins.line}: ${ins.keyword} source ${src} leaves the build context`);
  }
  const dest = posix.resolve(s.image.workdir ?? '/', dest0) + (dest0.endsWith('/') || dest0 === '.' ? '/' : '');
  if (chmod !== null && !/^[0-7]{3,4}$/.test(chmod)) throw new DockerfileError(`line ${ins.line}: --chmod must be octal, e.g. 755`);
  if (chown !== null && !/^[A-Za-z0-9_.-]+(:[A-Za-z0-9_.-]+)?$/.test(chown)) throw new DockerfileError(`line ${ins.line}: --chown must be user[:group]`);
  return { kind: 'copy', sources: words, dest, chown, chmod, key: ['COPY', words, dest, chown, chmod] };
}
