import type { FastifyInstance, onSendHookHandler, RouteOptions } from 'fastify';
import type { Readable } from 'node:stream';
import type { Authenticator } from '../../auth/principal.js';
import { DomainError, ERRORS } from '../../errors.js';
import './context.js';
import { KeyCheck } from './key-check.js';

/** Thrown at start when an authenticated route names no resource type: it would be open to every restricted key. */
export class UnguardedRouteError extends Error {}

/**
 * Every route requires `Authorization: Bearer <key>` unless its config says `auth: false`; `operator: true`
 * routes take any key of the operator's account instead of a resource scope. The key is checked
 * against the database on every request (`AccountService.authenticate`), so a revocation holds from the next
 * request on, wherever it was made.
 *
 * Authorization fails closed: every authenticated route needs a resource type (from its resource module, see
 * `resourceModule`, or its own `config.resource`), checked once all routes are known, before the server
 * listens. A route without one stops the start with an error naming it.
 */
export function registerAuth(app: FastifyInstance, accounts: Authenticator): void {
  const routes: RouteOptions[] = [];
  // Modules stamp their resource type in their own onRoute hook, which runs after this one: keep the route
  // options (the same object every hook sees) and read their final config once the app is ready.
  app.addHook('onRoute', (route) => {
    routes.push(route);
    if (route.config?.overlapAuth) route.onSend = [...[route.onSend ?? []].flat(), holdForCheck];
  });
  app.addHook('onReady', async () => {
    const unguarded = routes.filter((r) => r.config?.auth !== false && !r.config?.resource && !r.config?.operator);
    if (unguarded.length) {
      const names = unguarded.map((r) => `${[r.method].flat().join(',')} ${r.url}`).join(', ');
      throw new UnguardedRouteError(
        `refusing to start: authenticated route(s) without a resource type: ${names} (register them in a resourceModule, or set config.resource or config.auth: false)`,
      );
    }
  });

  app.decorateRequest('principal', null as never);
  app.addHook('onRequest', async (req) => {
    const config = req.routeOptions.config;
    if (config?.auth === false || !req.routeOptions.url) return;
    const header = req.headers.authorization;
    if (!header) throw ERRORS.unauthenticated('missing Authorization header: send "Authorization: Bearer <API key>"');
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!match) throw ERRORS.unauthenticated('malformed Authorization header: expected "Bearer <API key>"');
    // A plain JSON read whose key passed before runs under that principal while its key is read again,
    // in the route's own statement (`overlapAuth: 'folded'`) or in one of its own sent now; the response
    // waits for the check (onSend below).
    const hinted = config?.overlapAuth && (req.method === 'GET' || req.method === 'HEAD') ? accounts.hinted(match[1]!) : undefined;
    if (hinted) {
      req.keyCheck = new KeyCheck(accounts, hinted.hash, hinted.hint);
      if (config.overlapAuth !== 'folded') req.keyCheck.start();
    }
    const principal = hinted?.hint ?? (await accounts.authenticate(match[1]!));
    // Known before its grants are checked, so a call refused for them still says whose key made it (the audit
    // trail); nothing runs for a request this hook refuses.
    req.principal = principal;
    if (config?.operator) {
      await accounts.authorizeOperator(principal);
      return;
    }
    // Unreachable after the start-up check; kept so that a route added past it is refused, never open.
    if (!config?.resource) throw ERRORS.forbidden(`${req.routeOptions.url} has no resource type: refused`);
    const level = config.access ?? (req.method === 'GET' || req.method === 'HEAD' ? 'read' : 'write');
    accounts.authorize(principal, config.resource, level);
    for (const need of config.alsoNeeds ?? []) accounts.authorize(principal, need.resource, need.access);
  });

  app.decorateRequest('keyCheck', null);
}

/** onSend of `overlapAuth` routes: the answer leaves once the key's check passed, else the refusal does. */
const holdForCheck: onSendHookHandler = async (req, reply, payload) => {
  if (!req.keyCheck) return payload;
  const err = await req.keyCheck.result();
  if (err === null) return payload;
  // The key was refused meanwhile: what the route made is dropped, and the refusal goes out instead.
  (payload as Readable | null)?.destroy?.();
  const e = err instanceof DomainError ? err : null;
  if (!e) req.log.error({ err }, 'key check failed');
  reply.code(e?.status ?? 500).header('content-type', 'application/json; charset=utf-8');
  return JSON.stringify(e ? { message: e.message, error: e.code } : { message: 'internal server error', error: 'internal' });
};
