import { Type } from 'typebox';

// The create body's `mounts` schema, apart from mounts.ts: schemas.ts builds CreateBody from it, and mounts.ts
// reads CreateBody, so one file holding both would make the two import each other.

/**
 * `mounts` at create: a list of Runloop's mount shapes, told apart by `type`. The schema checks only the
 * type; each shape's fields are checked by `mountsOf`, whose messages name the field (a union in the schema
 * would answer "must match a schema in anyOf").
 */
export const MountsSchema = Type.Array(
  Type.Unsafe<Record<string, unknown> & { type: string }>({
    type: 'object',
    required: ['type'],
    properties: { type: { type: 'string', enum: ['object_mount', 'file_mount', 'code_mount', 'agent_mount', 'broker_mount'] } },
    description:
      'object_mount {object_id, object_path}: the object at object_path (archives unpacked into it); file_mount {target, content}: a file; agent_mount {agent_id or agent_name, agent_path, auth_token}: the agent installed at boot; broker_mount {axon_id, protocol: claude_json | acp | codex_json | pi_json, agent_binary, launch_args, working_directory}: the agent launched in the box, the axon events delivered to it in its protocol, its replies published back; code_mount {repo_owner, repo_name, token?, git_ref?, install_command?}: the repository cloned into the home directory',
  }),
  { maxItems: 100 },
);

/** Mount types this server places; the others are refused by `refuseUnsupported`. */
export const MOUNTS_SERVED = new Set(['object_mount', 'file_mount', 'agent_mount', 'broker_mount', 'code_mount']);
