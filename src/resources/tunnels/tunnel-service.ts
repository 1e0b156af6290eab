import crypto from 'node:crypto';
import { ERRORS } from '../../platform/errors.js';
import type { Store } from '../../platform/store/types.js';
import type { Sealer } from '../../platform/sealing/sealer.js';
import type { DevboxService } from '../devboxes/index.js';
import type { CreateResolver, ViewEnricher } from '../devboxes/index.js';
import { SqlTunnelStore, type TunnelRow } from './sql-tunnel-store.js';
import type { Tunnel, TunnelSettings } from './types.js';

/**
 * How long a looked-up tunnel is trusted without reading the table again: a remove on this server drops it at
 * once; one on another server sharing PostgreSQL takes effect here within this time.
 */
const CACHE_MS = 2000;
const CACHE_MAX = 10_000;

const aad = (devboxId: string) => `tunnel:${devboxId}`;

/** Tunnels in domain terms: enable, remove, look up by key (for the proxy), and the devbox extensions. */
export class TunnelService {
  private readonly tunnels: SqlTunnelStore;
  private readonly cache = new Map<string, { tunnel: Tunnel; atMs: number }>();

  constructor(
    private readonly store: Store,
    private readonly sealer: Sealer,
    private readonly devboxes: () => DevboxService,
  ) {
    this.tunnels = new SqlTunnelStore(store.db);
  }

  /** 400 unless the box runs, and when it has a tunnel already (one per box, like the API). */
  async enable(accountId: string, devboxId: string, settings: TunnelSettings): Promise<Tunnel> {
    const d = await this.devboxes().get(accountId, devboxId);
    if (d.status !== 'running') throw ERRORS.devboxNotRunning(d.id, d.status);
    const tunnel = newTunnel(d.id, settings);
    // The box's record says it has a tunnel in the transaction that writes it, so a view never misses it.
    const inserted = await this.store.transaction(async (tx) => {
      await tx.devboxes.markView(d.id, 'tunnel');
      return new SqlTunnelStore(tx.db).insert(this.toRow(tunnel));
    });
    if (!inserted) throw ERRORS.badState(`devbox ${d.id} already has a tunnel; remove_tunnel first`);
    return tunnel;
  }

  /** Idempotent: a box without a tunnel answers the same. */
  async remove(accountId: string, devboxId: string): Promise<void> {
    const d = await this.devboxes().get(accountId, devboxId);
    const key = await this.tunnels.remove(d.id);
    if (key) this.cache.delete(key);
  }

  async ofDevbox(devboxId: string): Promise<Tunnel | null> {
    const row = await this.tunnels.byDevbox(devboxId);
    return row ? this.fromRow(row) : null;
  }

  /** The tunnel named by a request's host name or path; undefined for a key nobody holds. */
  async byKey(key: string): Promise<Tunnel | undefined> {
    const hit = this.cache.get(key);
    if (hit && Date.now() - hit.atMs < CACHE_MS) return hit.tunnel;
    const row = await this.tunnels.byKey(key);
    if (!row) {
      this.cache.delete(key);
      return undefined;
    }
    const tunnel = this.fromRow(row);
    if (this.cache.size >= CACHE_MAX) this.cache.clear();
    this.cache.set(key, { tunnel, atMs: Date.now() });
    return tunnel;
  }

  /** `tunnel` at create: the tunnel is written in the transaction that inserts the box. */
  readonly resolver: CreateResolver = async (_accountId, input) => {
    if (!input.tunnel) return undefined;
    const settings = input.tunnel;
    return {
      persist: async (tx: Store, devbox) => void (await new SqlTunnelStore(tx.db).insert(this.toRow(newTunnel(devbox.id, settings)))),
      viewPart: 'tunnel',
    };
  };

  readonly enricher: ViewEnricher = { part: 'tunnel', none: { tunnel: null }, enrich: async (devbox) => ({ tunnel: toView(await this.ofDevbox(devbox.id)) }) };

  private toRow(t: Tunnel): TunnelRow {
    return {
      devbox_id: t.devboxId,
      tunnel_key: t.key,
      auth_mode: t.authMode,
      auth_token_sealed: t.authToken ? this.sealer.seal(t.authToken, aad(t.devboxId)) : null,
      http_keep_alive: t.httpKeepAlive ? 1 : 0,
      wake_on_http: t.wakeOnHttp ? 1 : 0,
      create_time_ms: t.createTimeMs,
    };
  }

  private fromRow(r: TunnelRow): Tunnel {
    return {
      devboxId: r.devbox_id,
      key: r.tunnel_key,
      authMode: r.auth_mode === 'authenticated' ? 'authenticated' : 'open',
      authToken: r.auth_token_sealed ? this.sealer.open(r.auth_token_sealed, aad(r.devbox_id)) : null,
      httpKeepAlive: Number(r.http_keep_alive) === 1,
      wakeOnHttp: Number(r.wake_on_http) === 1,
      createTimeMs: Number(r.create_time_ms),
    };
  }
}

/** 128 random bits as 32 hex digits: unguessable, and a valid lower-case DNS label. */
function newTunnel(devboxId: string, s: TunnelSettings): Tunnel {
  const authMode = s.authMode ?? 'open';
  return {
    devboxId,
    key: crypto.randomBytes(16).toString('hex'),
    authMode,
    authToken: authMode === 'authenticated' ? crypto.randomBytes(32).toString('base64url') : null,
    httpKeepAlive: s.httpKeepAlive ?? true,
    wakeOnHttp: s.wakeOnHttp ?? false,
    createTimeMs: Date.now(),
  };
}

/** TunnelView; `auth_token` only for authenticated tunnels. */
export function toView(t: Tunnel | null) {
  if (!t) return null;
  return {
    tunnel_key: t.key,
    auth_mode: t.authMode,
    create_time_ms: t.createTimeMs,
    http_keep_alive: t.httpKeepAlive,
    wake_on_http: t.wakeOnHttp,
    ...(t.authToken ? { auth_token: t.authToken } : {}),
  };
}
