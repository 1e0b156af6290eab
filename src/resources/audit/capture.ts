import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Counter, Gauge } from 'prom-client';
import type { Principal } from '../../platform/auth/principal.js';
import { fromPeer } from '../../platform/http/peers.js';
import type { AuditLog } from './audit-log.js';
import { type AuditRecord, clean } from './audit-record.js';

/** The ids devboxd makes (`dbx_…`, `key_…`) and secret names: what an answer's `id` may be to be recorded. */
const ID = /^[A-Za-z0-9_.:-]{1,128}$/;
/** A view whose first field is its id, as most are serialized: read without parsing the answer. */
const ID_FIRST = /^\{"id":"([^"\\]{1,128})"/;
/** Answers past this are not parsed for their id (an execution's output, a long list). */
const MAX_PARSED = 64 * 1024;
/** A refused bearer key shorter than this is not shown at all: its last four characters would be much of it. */
const MIN_SHOWN_KEY = 16;

/**
 * A request the trail records: a method that may change state, on a route of the API (`/v1/…`) that matched,
 * which its auth row does not declare a read (`access: 'read'`: wait_for_status, download_logs). Unmatched
 * URLs (404 before any route) are not recorded: they reach nothing.
 */
function audited(req: FastifyRequest): boolean {
  const m = req.method;
  if (m === 'GET' || m === 'HEAD' || m === 'OPTIONS') return false;
  return req.routeOptions.url?.startsWith('/v1/') === true && req.routeOptions.config?.access !== 'read';
}

/** The `id` of a successful JSON answer, if it names one. */
function answerIdOf(reply: FastifyReply, payload: unknown): string | undefined {
  if (typeof payload !== 'string' || reply.statusCode < 200 || reply.statusCode >= 300) return undefined;
  if (!String(reply.getHeader('content-type') ?? '').startsWith('application/json')) return undefined;
  const head = ID_FIRST.exec(payload);
  if (head) return ID.test(head[1]!) ? head[1] : undefined;
  if (payload.length > MAX_PARSED || !payload.startsWith('{')) return undefined;
  try {
    const id = (JSON.parse(payload) as { id?: unknown }).id;
    return typeof id === 'string' && ID.test(id) ? id : undefined;
  } catch {
    return undefined;
  }
}

const one = (h: string | string[] | undefined): string | undefined => (Array.isArray(h) ? h.join(', ') : h);

function recordOf(req: FastifyRequest, reply: FastifyReply, answerId: string | undefined, node: string): AuditRecord {
  const who = req.principal as Principal | null;
  const params = (req.params ?? {}) as Record<string, unknown>;
  const named = typeof params.id === 'string' ? params.id : typeof params.name === 'string' ? params.name : undefined;
  const resourceId = clean(named, 128);
  let keyLast4: string | null = null;
  if (!who) {
    const key = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '')?.[1];
    if (key && key.length >= MIN_SHOWN_KEY) keyLast4 = clean(key.slice(-4));
  }
  let ip = req.ip ?? null;
  let forwardedFor = one(req.headers['x-forwarded-for']);
  let peer: string | null = null;
  // Another API server of the cluster (its signature verified) added the address it saw last.
  if (fromPeer(req.raw) && forwardedFor) {
    peer = ip;
    const hops = forwardedFor.split(',');
    ip = hops.pop()!.trim();
    forwardedFor = hops.join(',').trim();
  }
  return {
    timeMs: Date.now(),
    node,
    accountId: who?.accountId ?? null,
    keyId: who?.keyId ?? null,
    keyLast4,
    method: req.method,
    route: req.routeOptions.url!,
    resourceId,
    answerId: answerId && answerId !== resourceId ? answerId : null,
    status: reply.statusCode,
    durationMs: Math.round(reply.elapsedTime),
    ip: clean(ip, 64),
    forwardedFor: clean(forwardedFor),
    peer: clean(peer, 64),
    userAgent: clean(req.headers['user-agent']),
    reqId: clean(req.id, 64),
  };
}

/**
 * Records every audited request once its answer is ready (refused ones too: 401, 403, any 4xx or 5xx). In
 * onSend rather than onResponse: onResponse never runs for a request whose client left before the answer
 * (an execute_sync that outlived its client still ran its command), and onSend is where the serialized answer,
 * and so a create's new id, is seen. App-wide, so every module's routes are covered whatever their order; a
 * request that is not audited costs one early return. A later onSend hook that fails makes the error answer
 * go through onSend again: the first record stands.
 */
export function registerAuditCapture(app: FastifyInstance, audit: AuditLog, node: string): void {
  const recorded = new WeakSet<FastifyRequest>();
  app.addHook('onSend', (req, reply, payload, done) => {
    if (audited(req) && !recorded.has(req)) {
      recorded.add(req);
      audit.record(recordOf(req, reply, answerIdOf(reply, payload), node));
    }
    done(null, payload);
  });
  if (app.hasDecorator('metrics')) registerAuditMetrics(app, audit);
}

/** The writer's counts on /metrics: what was written, dropped (and why), not shipped, and the queue now. */
function registerAuditMetrics(app: FastifyInstance, audit: AuditLog): void {
  const s = audit.stats;
  const registers = [app.metrics];
  new Counter({
    name: 'devboxd_audit_written_total',
    help: 'Audit records written to the audit_log table',
    registers,
    collect() {
      this.reset();
      this.inc(s.written);
    },
  });
  new Counter({
    name: 'devboxd_audit_dropped_total',
    help: 'Audit records the table never got: queue_full (DEVBOXD_AUDIT_QUEUE reached), refused (by the database)',
    labelNames: ['reason'] as const,
    registers,
    collect() {
      this.reset();
      for (const [reason, n] of Object.entries(s.dropped)) this.inc({ reason }, n);
    },
  });
  new Counter({
    name: 'devboxd_audit_unshipped_total',
    help: 'Audit lines DEVBOXD_AUDIT_LOG never got (its stream backed up, or a write failed)',
    registers,
    collect() {
      this.reset();
      this.inc(s.unshipped);
    },
  });
  new Gauge({
    name: 'devboxd_audit_queue_length',
    help: 'Audit records waiting to be written',
    registers,
    collect() {
      this.set(audit.queued);
    },
  });
}
