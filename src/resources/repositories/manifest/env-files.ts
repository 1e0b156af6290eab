import type { Tree } from './tree.js';

const ENV_FILES = ['.env.example', '.env.sample', '.env.template', '.env.dist', 'env.example', 'env.sample', '.env-example'];

/** A value that stands for "fill this in", not a value to use. */
const PLACEHOLDER = /^(|changeme|change[-_]?me|xxx+|todo|replace[-_]?me|your[-_].*|<.*>|\.\.\.|\*+)$/i;
/** Names whose example values are never real (a key in an example file is a stand-in). */
const SECRET_NAME = /(SECRET|TOKEN|PASSWORD|PASSWD|API_?KEY|PRIVATE_KEY|CREDENTIALS?)$/i;

/**
 * The root's example env file: variables with a usable value go to `env_vars`; empty, placeholder and
 * secret-named ones to the required set (the repository needs them, their value is the user's to give).
 */
export function envExample(t: Tree, required: Set<string>): Record<string, string> {
  const file = ENV_FILES.find((f) => t.text('', f) !== undefined);
  const vars: Record<string, string> = {};
  if (!file) return vars;
  for (const raw of t.text('', file)!.split('\n')) {
    const line = raw.trim().replace(/^export\s+/, '');
    const m = /^([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$/.exec(line);
    if (!m) continue;
    const [, name, rest] = m as unknown as [string, string, string];
    let value = rest.trim();
    const quoted = /^(['"])(.*)\1$/.exec(value);
    value = quoted ? quoted[2]! : value.replace(/\s+#.*$/, '');
    if (PLACEHOLDER.test(value) || SECRET_NAME.test(name)) required.add(name);
    else vars[name] = value;
    if (Object.keys(vars).length + required.size >= 500) break;
  }
  return vars;
}
