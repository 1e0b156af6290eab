import { ConfigError, intSetting } from '../../platform/config-error.js';
import type { Env } from '../../platform/module/index.js';

/** Where the audit trail is shipped besides its table: a file of JSON lines, the process's stdout, or nowhere. */
export type AuditShipping = { kind: 'none' } | { kind: 'stdout' } | { kind: 'file'; path: string };

/** The audit trail's settings (the audit module's `config`, parsed once at start). */
export interface AuditConfig {
  /** DEVBOXD_AUDIT_RETENTION_DAYS: rows older than this many days are pruned; 0 keeps them for ever. */
  retentionDays: number;
  /**
   * DEVBOXD_AUDIT_LOG: `stdout`, or a file the records are appended to as JSON lines (a relative path is under
   * the API server's data dir, `<data>/api` with DEVBOXD_ROLE=all); unset: the table only.
   */
  shipping: AuditShipping;
  /**
   * DEVBOXD_AUDIT_QUEUE: records waiting for their write, at most. Past it a record is dropped (counted in
   * `devboxd_audit_dropped_total`, logged), never waited for: a request never waits on the audit trail.
   */
  queueMax: number;
}

export const DEFAULT_RETENTION_DAYS = 90;
export const DEFAULT_QUEUE = 10_000;

export function loadAuditConfig(env: Env): AuditConfig {
  const raw = env.DEVBOXD_AUDIT_LOG?.trim() ?? '';
  if (raw.includes('\0')) throw new ConfigError('DEVBOXD_AUDIT_LOG must be "stdout" or a file path');
  const shipping: AuditShipping = raw === '' ? { kind: 'none' } : raw === 'stdout' ? { kind: 'stdout' } : { kind: 'file', path: raw };
  return {
    retentionDays: intSetting('DEVBOXD_AUDIT_RETENTION_DAYS', env.DEVBOXD_AUDIT_RETENTION_DAYS, DEFAULT_RETENTION_DAYS, 0, 36_500),
    shipping,
    queueMax: intSetting('DEVBOXD_AUDIT_QUEUE', env.DEVBOXD_AUDIT_QUEUE, DEFAULT_QUEUE, 10, 1_000_000),
  };
}
