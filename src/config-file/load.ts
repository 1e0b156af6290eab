import fs from 'node:fs';
import { isAlias, isMap, isScalar, isSeq, LineCounter, type Node, parseDocument } from 'yaml';
import { ConfigError } from '../platform/config-error.js';
import { typeName } from './schema.js';
import { BY_KEY, type PlacedSetting, SECTIONS } from './settings.js';

/** A setting the file sets: the variable's value as the environment would carry it, and its line. */
export interface FileEntry {
  setting: PlacedSetting;
  value: string;
  line: number;
}

/** What is wrong in the file, at its line (0: the file as a whole). */
export interface Problem {
  line: number;
  message: string;
}

export interface ConfigFile {
  path: string;
  /** By variable name. */
  entries: ReadonlyMap<string, FileEntry>;
  problems: Problem[];
  /** False when the file is not YAML at all (its syntax errors are the problems). */
  parsed: boolean;
  /** Not wrong, but worth saying (a file holding secrets that others may read). */
  warnings: string[];
}

/** Reads and validates a config file against the settings table; unreadable is a ConfigError, the rest problems. */
export function readConfigFile(file: string): ConfigFile {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(`config file ${file}: ${(err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (err as Error).message}`);
  }
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true });
  const entries = new Map<string, FileEntry>();
  const result: ConfigFile = { path: file, entries, problems: [], parsed: doc.errors.length === 0, warnings: [] };
  if (doc.errors.length) {
    result.problems = doc.errors.map((e) => ({ line: lines.linePos(e.pos[0]).line, message: `YAML: ${e.message.split('\n')[0]}` }));
    return result;
  }
  const lineOf = (n: Node | null | undefined) => (n?.range ? lines.linePos(n.range[0]).line : 0);
  const problem = (n: Node | null | undefined, message: string) => result.problems.push({ line: lineOf(n), message });
  const top = doc.contents;
  if (top === null || (isScalar(top) && top.value === null)) return result;
  if (!isMap(top)) {
    problem(top, `the file must be a mapping of sections (${SECTIONS.map((s) => s.name).join(', ')}), got ${describe(top)}`);
    return result;
  }
  for (const pair of top.items) {
    const name = isScalar(pair.key) ? String(pair.key.value) : '';
    const section = SECTIONS.find((s) => s.name === name);
    if (!section) {
      const setting = BY_KEY.get(name);
      problem(
        pair.key as Node,
        setting
          ? `${name} is a setting of section ${setting.section}: put it under ${setting.section}:`
          : `no section ${name} (sections: ${SECTIONS.map((s) => s.name).join(', ')})`,
      );
      continue;
    }
    const body = pair.value as Node | null;
    if (body === null || (isScalar(body) && body.value === null)) continue;
    if (!isMap(body)) {
      problem(pair.key as Node, `${name}: must be a mapping of settings, got ${describe(body)}`);
      continue;
    }
    for (const item of body.items) {
      const keyNode = item.key as Node;
      const key = isScalar(keyNode) ? String(keyNode.value) : '';
      const setting = BY_KEY.get(key);
      if (!setting || setting.section !== name) {
        problem(keyNode, setting ? `${name}.${key}: ${key} belongs in section ${setting.section}` : `${name}.${key}: no such setting${hint(key)}`);
        continue;
      }
      const raw = isAlias(item.value) ? (item.value.resolve(doc) as Node | undefined) : (item.value as Node | null);
      if (!raw || (isScalar(raw) && raw.value === null)) continue;
      const value = envValue(setting, raw);
      if (value === undefined) {
        problem(keyNode, `${name}.${key}: must be ${wanted(setting)}, got ${describe(raw)}`);
        continue;
      }
      entries.set(setting.name, { setting, value, line: lineOf(keyNode) });
    }
  }
  const secrets = [...result.entries.values()].filter((e) => e.setting.secret === true || /:\/\/[^/@\s]*:[^/@\s]*@/.test(e.value));
  if (secrets.length && (fs.statSync(file).mode & 0o077) !== 0) {
    result.warnings.push(`config file ${file} holds secrets (${secrets.map((e) => e.setting.key).join(', ')}) and others may read it: chmod 600 ${file}`);
  }
  return result;
}

/** The value as an environment variable carries it, or undefined when its YAML type is not the setting's. */
function envValue(setting: PlacedSetting, node: Node): string | undefined {
  const t = setting.type;
  if (isSeq(node)) {
    if (t !== 'list') return undefined;
    const items = node.items.map((i) => (isScalar(i) && typeof i.value === 'string' ? i.value : undefined));
    return items.every((i) => i !== undefined) ? items.join(',') : undefined;
  }
  if (!isScalar(node)) return undefined;
  const v = node.value;
  if (typeof v === 'string') return t === 'integer' || t === 'number' || t === 'boolean' ? undefined : v;
  if (typeof v === 'boolean') return t === 'boolean' ? String(v) : undefined;
  if (typeof v === 'number') {
    if (t === 'number') return String(v);
    return (t === 'integer' || t === 'size' || t === 'port or word') && Number.isSafeInteger(v) ? String(v) : undefined;
  }
  return undefined;
}

function wanted(setting: PlacedSetting): string {
  const t = setting.type;
  if (typeof t !== 'string') return `a string (${typeName(t)})`;
  return {
    integer: 'an integer',
    number: 'a number',
    boolean: 'true or false',
    string: 'a string',
    list: 'a string of comma-separated items or a list of strings',
    size: 'an integer of bytes or a string such as 512M',
    'port or word': 'a port number or a string',
  }[t];
}

function describe(node: Node): string {
  if (isMap(node)) return 'a mapping';
  if (isSeq(node)) {
    const odd = node.items.find((i) => !isScalar(i) || typeof i.value !== 'string');
    return odd ? `a list holding ${describe(odd as Node)}` : 'a list';
  }
  if (isScalar(node)) {
    const v = node.value;
    if (typeof v === 'string') return `a string (${JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v)})`;
    if (typeof v === 'number') return Number.isInteger(v) ? `an integer (${v})` : `a number (${v})`;
    if (typeof v === 'boolean') return `a boolean (${v})`;
  }
  return 'a value of another kind';
}

/** ", did you mean X" for a key one or two edits from a known one. */
function hint(key: string): string {
  let best: PlacedSetting | undefined;
  let bestDistance = 3;
  for (const s of BY_KEY.values()) {
    const d = distance(key, s.key);
    if (d < bestDistance) [best, bestDistance] = [s, d];
  }
  return best ? ` (did you mean ${best.section}.${best.key}?)` : '';
}

function distance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) row.push(Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1)));
    prev = row;
  }
  return prev[b.length]!;
}
