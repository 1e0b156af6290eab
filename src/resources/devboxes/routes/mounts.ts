import { ERRORS } from '../../../platform/errors.js';
import type { AgentMount, CodeMount, ObjectMount } from '../create-input.js';
import type { CreateBody } from './schemas.js';

const ALLOWED: Record<string, string[]> = {
  object_mount: ['type', 'object_id', 'object_path'],
  file_mount: ['type', 'target', 'content'],
  agent_mount: ['type', 'agent_id', 'agent_name', 'agent_path', 'auth_token'],
  code_mount: ['type', 'repo_owner', 'repo_name', 'token', 'git_ref', 'install_command'],
};

/** An optional string field: null and absent are "not given". */
const optString = (m: Record<string, unknown>, field: string, where: string, max: number): string | null =>
  m[field] === undefined || m[field] === null ? null : mountString(m, field, where, max);

const mountString = (m: Record<string, unknown>, field: string, where: string, max: number): string => {
  const v = m[field];
  if (typeof v !== 'string' || v.length === 0 || v.length > max || v.includes('\u0000')) {
    throw ERRORS.invalid(`${where}.${field} must be a string of 1 to ${max} characters without NUL`);
  }
  return v;
};

/**
 * The served mounts in domain terms: `object_mount`s as object mounts, `agent_mount`s as agent mounts (the
 * agents module resolves them), `code_mount`s (and legacy `code_mounts`) as code mounts (the repositories
 * module checks them), `file_mount`s added to the file mounts (after `file_mounts`, so a mount's target
 * wins). Runs after `refuseUnsupported`, so every mount here is of a served type.
 */
export function mountsOf(b: Pick<CreateBody, 'mounts' | 'file_mounts' | 'code_mounts'>): {
  objectMounts: ObjectMount[];
  agentMounts: AgentMount[];
  codeMounts: CodeMount[];
  fileMounts: Record<string, string> | null | undefined;
  brokerMounts: { index: number; mount: Record<string, unknown> }[];
} {
  const objectMounts: ObjectMount[] = [];
  const agentMounts: AgentMount[] = [];
  const brokerMounts: { index: number; mount: Record<string, unknown> }[] = [];
  let fileMounts = b.file_mounts;
  const codeMounts = (b.code_mounts ?? []).map((m, i) => codeMountOf(m, `body.code_mounts[${i}]`, CODE_FIELDS));
  for (const [i, m] of (b.mounts ?? []).entries()) {
    const where = `body.mounts[${i}]`;
    // Checked by the axons module's resolver (its messages name the field the same way).
    if (m.type === 'broker_mount') {
      brokerMounts.push({ index: i, mount: m });
      continue;
    }
    if (m.type === 'code_mount') {
      codeMounts.push(codeMountOf(m, where, ALLOWED.code_mount!));
      continue;
    }
    const extra = Object.keys(m).find((k) => !ALLOWED[m.type]!.includes(k));
    if (extra) throw ERRORS.invalid(`${where}.${extra} is not a supported parameter of a ${m.type}`);
    if (m.type === 'object_mount') {
      objectMounts.push({ objectId: mountString(m, 'object_id', where, 200), objectPath: mountString(m, 'object_path', where, 4096) });
    } else if (m.type === 'agent_mount') {
      agentMounts.push({
        index: i,
        agentId: optString(m, 'agent_id', where, 200),
        agentName: optString(m, 'agent_name', where, 256),
        agentPath: optString(m, 'agent_path', where, 4096),
        authToken: optString(m, 'auth_token', where, 4096),
      });
    } else {
      if (typeof m.content !== 'string') throw ERRORS.invalid(`${where}.content must be a string`);
      fileMounts = { ...(fileMounts ?? {}), [mountString(m, 'target', where, 4096)]: m.content };
    }
  }
  return { objectMounts, agentMounts, codeMounts, fileMounts, brokerMounts };
}

const CODE_FIELDS = ALLOWED.code_mount!.slice(1);

/** A code mount's fields (`code_mount` in `mounts`, or an item of `code_mounts`); the repositories' resolver checks their values. */
function codeMountOf(m: Record<string, unknown>, where: string, allowed: string[]): CodeMount {
  const extra = Object.keys(m).find((k) => !allowed.includes(k));
  if (extra) throw ERRORS.invalid(`${where}.${extra} is not a supported parameter of a code mount`);
  return {
    repoOwner: mountString(m, 'repo_owner', where, 100),
    repoName: mountString(m, 'repo_name', where, 100),
    token: optString(m, 'token', where, 4096),
    gitRef: optString(m, 'git_ref', where, 255),
    installCommand: optString(m, 'install_command', where, 100_000),
  };
}
