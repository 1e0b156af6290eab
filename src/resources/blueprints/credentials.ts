/**
 * A service's image credentials are kept sealed (AES-GCM under the master key, like secret values) inside
 * the blueprint's stored parameters: `{username, password_sealed}`, opened only for the pull. `secrets
 * rotate-key` re-seals them with the rest (resealBlueprintCredentialsPage).
 */
import type { SqlExecutor } from '../../platform/store/sql/executor.js';
import type { ResealPage } from '../mcp-configs/reseal.js';
import type { Sealer } from '../secrets/sealer.js';
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

/** Up to `limit` blueprints after `after` (by id) whose parameters may hold a sealed password (the caller parses them). */
const withCredentials = (db: SqlExecutor, after: string, limit: number) =>
  db.query<{ id: string; parameters: string }>("SELECT id, parameters FROM blueprints WHERE parameters LIKE '%\"password_sealed\"%' AND id > ? ORDER BY id LIMIT ?", [after, limit]);

/**
 * Re-seals, for `secrets rotate-key`, up to `limit` blueprints' service passwords not yet under `keyId` (after
 * the cursor `after`). Each write applies only over the text it read; a password that does not open is left
 * (the service's pull says so).
 */
export async function resealBlueprintCredentialsPage(db: SqlExecutor, sealer: Seals, keyId: string, after: string, limit: number): Promise<ResealPage> {
  const { rows } = await withCredentials(db, after, limit);
  let n = 0;
  for (const r of rows) {
    const params = JSON.parse(r.parameters) as { services?: ServiceSpec[] };
    let changed = false;
    params.services = (params.services ?? []).map((s) => {
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
 * How many blueprints hold a service password sealed under `keyId` (a key a prune would drop). Each candidate's
 * parameters are parsed, as the reseal page does: a LIKE over the JSON would also count a tenant's own text
 * that looks like a sealed password (a service `env` entry `"password_sealed": "v1.<key>."`) and so block the
 * prune, and a `_` in the key id would be a wildcard.
 */
export async function blueprintsSealedUnder(db: SqlExecutor, keyId: string): Promise<number> {
  const PAGE = 500;
  let n = 0;
  for (let after = ''; ; ) {
    const { rows } = await withCredentials(db, after, PAGE);
    for (const r of rows) if (sealedServices(r.parameters).some((c) => c.password_sealed.startsWith(`v1.${keyId}.`))) n++;
    if (rows.length < PAGE) return n;
    after = rows.at(-1)!.id;
  }
}

/** The stored credentials of a blueprint's services (parameters as stored). */
function sealedServices(parameters: string): StoredCredentials[] {
  const services = (JSON.parse(parameters) as { services?: ServiceSpec[] }).services ?? [];
  return services.map((s) => s.credentials as unknown as StoredCredentials | null | undefined).filter((c): c is StoredCredentials => typeof c?.password_sealed === 'string');
}
