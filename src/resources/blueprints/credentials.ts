/**
 * A service's image credentials are kept sealed (AES-GCM under the master key, like secret values) inside
 * the blueprint's stored parameters: `{username, password_sealed}`, opened only for the pull (code mounts'
 * tokens likewise: `token_sealed`, code-mounts.ts). `secrets rotate-key` re-seals them with the rest
 * (resealBlueprintCredentialsPage).
 */
import type { SqlExecutor } from '../../platform/store/sql/executor.js';
import type { ResealPage } from '../mcp-configs/reseal.js';
import type { Sealer } from '../secrets/sealer.js';
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

/**
 * Re-seals, for `secrets rotate-key`, up to `limit` blueprints' service passwords and code mount tokens not yet
 * under `keyId` (after the cursor `after`). Each write applies only over the text it read; a password or token
 * that does not open is left (the service's pull, or the build, says so).
 */
export async function resealBlueprintCredentialsPage(db: SqlExecutor, sealer: Seals, keyId: string, after: string, limit: number): Promise<ResealPage> {
  const { rows } = await db.query<{ id: string; parameters: string }>(
    "SELECT id, parameters FROM blueprints WHERE (parameters LIKE '%\"password_sealed\"%' OR parameters LIKE '%\"token_sealed\"%') AND id > ? ORDER BY id LIMIT ?",
    [after, limit],
  );
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
    if (params.services) params.services = params.services.map((s) => {
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

/** How many blueprints hold a service password sealed under `keyId` (a key a prune would drop). */
export async function blueprintsSealedUnder(db: SqlExecutor, keyId: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>('SELECT COUNT(*) AS n FROM blueprints WHERE parameters LIKE ? OR parameters LIKE ?', [
    `%"password_sealed":"v1.${keyId}.%`,
    `%"token_sealed":"v1.${keyId}.%`,
  ]);
  return Number(rows[0]?.n ?? 0);
}
