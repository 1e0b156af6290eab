// Turns the create form's text fields into the request body: `KEY=value` lines into maps, one command per
// line into a list, and only the launch parameters the user filled in (the server's defaults, or the
// blueprint's, hold for the rest).
import type { DevboxCreateParams } from '@runloop/api-client/resources/devboxes/devboxes';
import type { LaunchParameters } from '@runloop/api-client/resources/shared';

/** `KEY=value` per line (blank lines skipped); a line without `=` is an error naming it. */
export function keyValues(text: string, field: string): Record<string, string> | undefined {
  const out: Record<string, string> = {};
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim();
    if (!line) continue;
    const eq = line.indexOf('=');
    if (eq <= 0) throw new Error(`${field}, line ${i + 1}: write it as KEY=value`);
    out[line.slice(0, eq).trim()] = line.slice(eq + 1);
  }
  return Object.keys(out).length ? out : undefined;
}

export function lines(text: string): string[] | undefined {
  const out = text
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  return out.length ? out : undefined;
}

const num = (s: string): number | undefined => (s.trim() === '' ? undefined : Number(s));

export type Source = 'image' | 'blueprint' | 'snapshot';

export interface CreateForm {
  name: string;
  source: Source;
  /** A blueprint id (`bpt_…`) or name, or a snapshot id: what the select chose or the user typed. */
  from: string;
  size: string;
  cpu: string;
  memory: string;
  disk: string;
  launchCommands: string;
  keepAlive: string;
  idleSeconds: string;
  onIdle: string;
  username: string;
  uid: string;
  env: string;
  entrypoint: string;
  metadata: string;
}

export function createBody(f: CreateForm): DevboxCreateParams {
  const lp: LaunchParameters = {};
  if (f.size) lp.resource_size_request = f.size as LaunchParameters['resource_size_request'];
  if (f.size === 'CUSTOM_SIZE') {
    lp.custom_cpu_cores = num(f.cpu);
    lp.custom_gb_memory = num(f.memory);
  }
  if (num(f.disk) !== undefined) lp.custom_disk_size = num(f.disk);
  lp.launch_commands = lines(f.launchCommands);
  if (num(f.keepAlive) !== undefined) lp.keep_alive_time_seconds = num(f.keepAlive);
  if (num(f.idleSeconds) !== undefined) lp.after_idle = { idle_time_seconds: num(f.idleSeconds)!, on_idle: f.onIdle as 'shutdown' | 'suspend' };
  // Both or neither: the server names whichever is missing.
  if (f.username.trim() || f.uid.trim()) lp.user_parameters = { username: f.username.trim(), uid: num(f.uid) as number };
  const body: DevboxCreateParams = {
    name: f.name.trim() || undefined,
    entrypoint: f.entrypoint.trim() || undefined,
    environment_variables: keyValues(f.env, 'Environment variables'),
    metadata: keyValues(f.metadata, 'Metadata'),
  };
  const from = f.from.trim();
  if (f.source !== 'image' && !from)
    throw new Error(`Choose a ${f.source === 'blueprint' ? 'blueprint' : 'snapshot'} to start from, or start from the default image.`);
  if (f.source === 'blueprint') {
    if (from.startsWith('bpt_')) body.blueprint_id = from;
    else body.blueprint_name = from;
  } else if (f.source === 'snapshot') body.snapshot_id = from;
  const given = Object.entries(lp).filter(([, v]) => v !== undefined);
  if (given.length) body.launch_parameters = Object.fromEntries(given);
  return body;
}
