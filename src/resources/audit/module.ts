import type { Module } from '../../host.js';
import { AuditLog } from './audit-log.js';
import { registerAuditCapture } from './capture.js';
import { AUDIT_COMMANDS } from './commands.js';
import { type AuditConfig, loadAuditConfig } from './config.js';
import { openLineSink } from './line-sink.js';
import { AUDIT_SCHEMA } from './schema.js';
import { SqlAuditStore } from './sql-audit-store.js';

declare module '../../platform/module/contract.js' {
  interface Services {
    /** The audit trail's writer: every state-changing API request, queued and written in batches. */
    audit: AuditLog;
  }
}

/**
 * The audit trail: every state-changing request to the API (who, what, when, from where, how it ended) in
 * the `audit_log` table, kept DEVBOXD_AUDIT_RETENTION_DAYS, and shipped as JSON lines to DEVBOXD_AUDIT_LOG;
 * `devboxd audit` reads the table. It needs no other module: it hooks the app itself, so every module's
 * routes are recorded whatever their order.
 */
export const auditModule: Module<AuditConfig> = {
  name: 'audit',
  config: loadAuditConfig,
  schema: AUDIT_SCHEMA,
  async build({ host, config, log }) {
    const sink = await openLineSink(config.shipping, host.config.dataDir);
    return { audit: new AuditLog({ store: new SqlAuditStore(host.store.db), sink, config, log }) };
  },
  routes: (app, s, host) => registerAuditCapture(app, s.audit, host.node),
  start: { run: (s) => s.audit.start() },
  close: (s) => s.audit.close(),
  commands: AUDIT_COMMANDS,
};
