/**
 * A service's image credentials are kept sealed (AES-GCM under the master key, like secret values) inside
 * the blueprint's stored parameters: `{username, password_sealed}`, opened only for the pull (code mounts'
 * tokens likewise: `token_sealed`, code-mounts.ts). `secrets rotate-key` re-seals them with the rest
 * (resealBlueprintCredentialsPage).
 */
import type { SqlExecutor } from '../../platform/store/sql/executor.js';
import type { ResealPage, SealedTexts } from '../../platform/sealing/resealing.js';
import type { Sealer } from '../../platform/sealing/sealer.js';
import { resealCodeMount, type CodeMountSpec } from './code-mounts.js';
import type { ServiceSpec } from './services.js';

/** What the database holds of a service's credentials. */
interface StoredCredentials {
  username: string;
  password_sealed: string;
}

type Seals = Pick<Sealer, 'open' | 'seal'>;

/** Binds a sealed password to its blueprint and service: copied elsewhere, it does not open. */
const aadOf = (blueprintId: string, service: string) => `blueprint-service:${blueprintId}:${service}`;

/** The services as stored: each password sealed. */
export function sealServices(services: ServiceSpec[], blueprintId: string, sealer: Seals): ServiceSpec[] {
  return services.map((s) => {
    if (!s.credentials) return s;
    const stored: StoredCredentials = { username: s.credentials.username, password_sealed: sealer.seal(s.credentials.password, aadOf(blueprintId, s.name)) };
    return { ...s, credentials: stored as unknown as ServiceSpec['credentials'] };
  });
}

/** A stored service's credentials for its pull; throws (SealError) when the password does not open. */
export function openCredentials(s: ServiceSpec, blueprintId: string, sealer: Pick<Sealer, 'open'>): { username: string; password: string } | undefined {
  const c = s.credentials as unknown as StoredCredentials | null | undefined;
  if (!c) return undefined;
  return { username: c.username, password: sealer.open(c.password_sealed, aadOf(blueprintId, s.name)) };
}

/** Up to `limit` blueprints after `after` (by id) whose parameters may hold a sealed password or token (the caller parses them). */
const withCredentials = (db: SqlExecutor, after: string, limit: number) =>
  db.query<{ id: string; parameters: string }>(
    'SELECT id, parameters FROM blueprints WHERE (parameters LIKE \'%"password_sealed"%\' OR parameters LIKE \'%"token_sealed"%\') AND id > ? ORDER BY id LIMIT ?',
    [after, limit],
  );

/**
 * Re-seals, for `secrets rotate-key`, up to `limit` blueprints' service passwords and code mount tokens not yet
 * under `keyId` (after the cursor `after`). Each write applies only over the text it read; a password or token
 * that does not open is left (the service's pull, or the build, says so).
 */
export async function resealBlueprintCredentialsPage(db: SqlExecutor, sealer: Seals, keyId: string, after: string, limit: number): Promise<ResealPage> {
  const { rows } = await withCredentials(db, after, limit);
  let n = 0;
  for (const r of rows) {
    const params = JSON.parse(r.parameters) as { services?: ServiceSpec[]; code_mounts?: CodeMountSpec[] };
    let changed = false;
    if (params.code_mounts) {
      params.code_mounts = params.code_mounts.map((m) => {
        const again = resealCodeMount(m, r.id, sealer, keyId);
        changed ||= again !== null;
        return again ?? m;
      });
    }
    if (params.services)
      params.services = params.services.map((s) => {
        const c = s.credentials as unknown as StoredCredentials | null | undefined;
        if (!c || c.password_sealed.startsWith(`v1.${keyId}.`)) return s;
        try {
          const password = sealer.open(c.password_sealed, aadOf(r.id, s.name));
          changed = true;
          return sealServices([{ ...s, credentials: { username: c.username, password } }], r.id, sealer)[0]!;
        } catch {
          return s;
        }
      });
    if (!changed) continue;
    const { rowCount } = await db.query('UPDATE blueprints SET parameters = ? WHERE id = ? AND parameters = ?', [JSON.stringify(params), r.id, r.parameters]);
    n += rowCount;
  }
  return { n, last: rows.length < limit ? undefined : rows.at(-1)!.id };
}

/**
 * How many blueprints hold a service password or code mount token sealed under `keyId` (a key a prune would drop). Each candidate's
 * parameters are parsed, as the reseal page does: a LIKE over the JSON would also count a tenant's own text
 * that looks like a sealed password (a service `env` entry `"password_sealed": "v1.<key>."`) and so block the
 * prune, and a `_` in the key id would be a wildcard.
 */
export async function blueprintsSealedUnder(db: SqlExecutor, keyId: string): Promise<number> {
  const PAGE = 500;
  let n = 0;
  for (let after = ''; ; ) {
    const { rows } = await withCredentials(db, after, PAGE);
    for (const r of rows) if (sealedValues(r.parameters).some((v) => v.startsWith(`v1.${keyId}.`))) n++;
    if (rows.length < PAGE) return n;
    after = rows.at(-1)!.id;
  }
}

/** The sealed values of a blueprint (parameters as stored): its services' passwords and code mounts' tokens. */
function sealedValues(parameters: string): string[] {
  const p = JSON.parse(parameters) as { services?: ServiceSpec[]; code_mounts?: { token_sealed?: unknown }[] };
  const passwords = (p.services ?? []).map((s) => (s.credentials as unknown as StoredCredentials | null | undefined)?.password_sealed);
  const tokens = (p.code_mounts ?? []).map((m) => m.token_sealed);
  return [...passwords, ...tokens].filter((v): v is string => typeof v === 'string');
}

/** The blueprints' sealed texts: service image passwords and code mount tokens (see SealedTexts). */
export const BLUEPRINTS_SEALED: SealedTexts = { tables: ['blueprints'], pages: [resealBlueprintCredentialsPage], countUnder: blueprintsSealedUnder };
