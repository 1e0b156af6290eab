/**
 * One audited request: who (account and key, or the last four characters of a refused key), what (method,
 * route pattern, the ids it named), when, from where, and how it ended. Never a body, a query string, a
 * header other than the user agent and X-Forwarded-For, or a key.
 */
export interface AuditRecord {
  timeMs: number;
  /** DEVBOXD_NODE_NAME of the server that answered. */
  node: string;
  accountId: string | null;
  keyId: string | null;
  /** The last four characters of a refused bearer key (null when the key passed, or was too short to show any). */
  keyLast4: string | null;
  method: string;
  /** The route as registered (`/v1/devboxes/:id/shutdown`), never the URL as sent. */
  route: string;
  /** The `:id` (or `:name`) of the path. */
  resourceId: string | null;
  /** The `id` a 2xx answer names, when it is not `resourceId` (the new object of a create). */
  answerId: string | null;
  status: number;
  /** From the request's arrival until its answer was ready to leave. */
  durationMs: number;
  /** The caller's address: the socket's, or for a request another API server forwarded, the one that server saw. */
  ip: string | null;
  /** X-Forwarded-For as the request carried it (unverified: whatever the client or a proxy in front wrote). */
  forwardedFor: string | null;
  /** The address of the API server that forwarded the request here (the same request is recorded there too). */
  peer: string | null;
  userAgent: string | null;
  /** The request's id in this server's logs (`reqId`). */
  reqId: string | null;
}

/** The record as a JSON line (DEVBOXD_AUDIT_LOG, `devboxd audit --json`): snake_case, every field present. */
export function auditJson(r: AuditRecord, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    type: 'devboxd.audit',
    time: new Date(r.timeMs).toISOString(),
    node: r.node,
    account_id: r.accountId,
    ...extra,
    key_id: r.keyId,
    key_last4: r.keyLast4,
    method: r.method,
    route: r.route,
    resource_id: r.resourceId,
    answer_id: r.answerId,
    status: r.status,
    duration_ms: r.durationMs,
    ip: r.ip,
    forwarded_for: r.forwardedFor,
    peer: r.peer,
    user_agent: r.userAgent,
    req_id: r.reqId,
  };
}

/** Longest text kept of each field a client chooses (an id in the path, a user agent, X-Forwarded-For). */
const MAX_TEXT = 256;

/**
 * A client-chosen text as the trail keeps it: control characters (NUL among them, which PostgreSQL's text
 * refuses and which would fail the whole batch) become `?`, and it is cut at MAX_TEXT characters.
 */
export function clean(text: string | undefined | null, max = MAX_TEXT): string | null {
  if (text === undefined || text === null || text === '') return null;
  return text.slice(0, max).replace(/[\u0000-\u001f\u007f]/g, '?');
}
