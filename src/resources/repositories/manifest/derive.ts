import { DEFAULT_FROM } from '../../blueprints/index.js';
import type { RepoSurvey } from '../survey.js';
import type { RepositoryManifest, Workspace } from '../types.js';
import { composeServices, parseYaml } from './compose.js';
import { envExample } from './env-files.js';
import { analyzeNode, nodeWorkspaceGlobs } from './node.js';
import { analyzePython } from './python.js';
import { analyzeGo, analyzeJvm, analyzeMake, analyzeRust, analyzeRuby } from './toolchains.js';
import { obj, strings, Tree, type Finding, type Language } from './tree.js';

/** Analyzers in the order their findings merge (the Makefile only fills what the others left open). */
const ANALYZERS = [analyzeNode, analyzePython, analyzeGo, analyzeRust, analyzeRuby, analyzeJvm, analyzeMake];
/** Files that make a directory a project of its own. */
const PROJECT_FILES = [
  'package.json',
  'pyproject.toml',
  'setup.py',
  'requirements.txt',
  'Pipfile',
  'go.mod',
  'Cargo.toml',
  'Gemfile',
  'pom.xml',
  'build.gradle',
  'build.gradle.kts',
];
/** Most workspaces a manifest lists. */
const MAX_WORKSPACES = 100;

/**
 * The workspace directories: the root; the members a root declares (npm/yarn/pnpm workspaces, cargo and
 * uv workspace members, go.work); and when the root is no project itself, projects one or two levels down.
 */
function workspaceDirs(t: Tree): string[] {
  const dirs = [''];
  const members = (globs: string[], file: string) => dirs.push(...t.dirsMatching(globs, file));
  members(nodeWorkspaceGlobs(t, parseYaml), 'package.json');
  members(strings(obj(t.toml('', 'Cargo.toml')?.workspace).members), 'Cargo.toml');
  members(strings(obj(obj(obj(t.toml('', 'pyproject.toml')?.tool).uv).workspace).members), 'pyproject.toml');
  const work = t.text('', 'go.work');
  if (work)
    members(
      [...work.matchAll(/^\s*(?:use\s+)?(\.\/[\w./-]+)\s*$/gm)].map((m) => m[1]!),
      'go.mod',
    );
  if (!PROJECT_FILES.some((f) => t.has('', f))) {
    for (const p of t.survey.paths) {
      const parts = p.split('/');
      if (parts.length >= 2 && parts.length <= 3 && PROJECT_FILES.includes(parts.at(-1)!)) dirs.push(parts.slice(0, -1).join('/'));
    }
  }
  return [...new Set(dirs)].slice(0, MAX_WORKSPACES);
}

const uniq = (xs: string[]) => [...new Set(xs)];

/** One workspace from what the analyzers found in its directory; null when none found anything. */
function workspaceOf(dir: string, found: Finding[], repoName: string): { ws: Workspace; found: Finding[] } | null {
  if (!found.length) return null;
  const first = (pick: (f: Finding) => string[]) => found.map(pick).find((c) => c.length) ?? [];
  const all = (pick: (f: Finding) => string[]) => uniq(found.flatMap(pick));
  const install = all((f) => f.install);
  return {
    found,
    ws: {
      name: found.find((f) => f.name)?.name ?? (dir ? dir.split('/').pop()! : repoName),
      path: dir,
      build_tool: all((f) => f.buildTools),
      workspace_setup_commands: install,
      workspace_refresh_commands: install,
      dev_commands: {
        install,
        build: first((f) => f.build),
        test: first((f) => f.test),
        lint: all((f) => f.lint),
        scripts: all((f) => f.scripts).slice(0, 100),
      },
    },
  };
}

/**
 * The repository manifest of a surveyed repository: workspaces with their build tools and dev commands,
 * the languages and versions they declare, the toolchain set-up the default image needs, the compose
 * file's services and the variables an example env file or the compose file name.
 */
export function deriveManifest(survey: RepoSurvey, opts: { repoName: string; baseImageName?: string }): RepositoryManifest {
  const t = new Tree(survey);
  const workspaces: Workspace[] = [];
  const findings: Finding[] = [];
  for (const dir of workspaceDirs(t)) {
    const w = workspaceOf(
      dir,
      ANALYZERS.map((a) => a(t, dir)).filter((f): f is Finding => f !== null),
      opts.repoName,
    );
    if (!w) continue;
    workspaces.push(w.ws);
    findings.push(...w.found);
  }
  const languages: Language[] = [];
  for (const l of findings.flatMap((f) => f.languages)) {
    const known = languages.find((x) => x.language === l.language);
    if (!known) languages.push({ ...l });
    else if (!known.version && l.version) known.version = l.version;
  }
  const apt = uniq(findings.flatMap((f) => f.apt)).sort();
  const setup = uniq(findings.flatMap((f) => f.setup ?? []));
  const required = new Set<string>();
  const env = envExample(t, required);
  const services = composeServices(t, required);
  return {
    container_config: {
      base_image_name: opts.baseImageName ?? DEFAULT_FROM,
      setup_commands: [...(apt.length ? [`apt-get update && apt-get install -y --no-install-recommends ${apt.join(' ')}`] : []), ...setup],
      architecture: 'x86_64',
    },
    workspaces,
    containerized_services: services.length ? services : null,
    languages,
    required_env_vars: required.size ? [...required].sort() : null,
    env_vars: Object.keys(env).length ? env : null,
  };
}
