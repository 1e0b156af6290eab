import type { Readable } from 'node:stream';
import { Type } from 'typebox';
import { clientGone } from '../../../platform/http/request-signal.js';
import type { Api } from '../../../platform/http/resource-module.js';
import { ERROR_RESPONSES, IdParams, pageEnvelope, replies, toPageQuery } from '../../../platform/http/schemas/common.js';
import { mountsOf } from '../../devboxes/index.js';
import { runLogsZip } from '../run-logs.js';
import type { ScenarioRouteOptions } from './options.js';
import { refuseLaunch, RunList, RunListQuery, RunView, StartRunBody, toRunView } from './schemas.js';

const ZipReplies = {
  200: {
    description: "the run's logs as a zip, streamed",
    content: { 'application/zip': { schema: Type.Unsafe<Readable>({ type: 'string', format: 'binary' }) } },
  },
  ...ERROR_RESPONSES,
};

/** Scenario runs: start, read, list, score, complete, cancel, download_logs. */
export function runRoutes(app: Api, { scenarios: m, readLogs }: ScenarioRouteOptions): void {
  const { runs } = m;
  app.post('/v1/scenarios/start_run', { schema: { body: StartRunBody, response: replies(RunView) } }, async (req) => {
    const b = req.body;
    const p = b.runProfile ?? {};
    refuseLaunch(p.launchParameters, p.mounts);
    const mounts = p.mounts ? mountsOf({ mounts: p.mounts }) : null;
    const run = await runs.start(req.principal.accountId, {
      scenarioId: b.scenario_id,
      runName: b.run_name,
      benchmarkRunId: b.benchmark_run_id,
      metadata: b.metadata,
      purpose: p.purpose,
      envVars: p.envVars,
      secrets: p.secrets,
      launchParameters: p.launchParameters,
      mounts: mounts?.objectMounts ?? null,
      otherMounts: mounts && {
        fileMounts: mounts.fileMounts,
        codeMounts: mounts.codeMounts,
        agentMounts: mounts.agentMounts,
        brokerMounts: mounts.brokerMounts,
      },
    });
    return toRunView(run);
  });
  app.get('/v1/scenarios/runs', { schema: { querystring: RunListQuery, response: replies(RunList) } }, async (req) => {
    const q = req.query;
    const page = await runs.list(
      req.principal.accountId,
      { scenarioId: q.scenario_id, benchmarkRunId: q.benchmark_run_id, state: q.state, name: q.name, search: q.search },
      toPageQuery(q),
    );
    return pageEnvelope('runs', { ...page, items: page.items.map(toRunView) });
  });
  app.get('/v1/scenarios/runs/:id', { schema: { params: IdParams, response: replies(RunView) } }, async (req) =>
    toRunView(await runs.get(req.principal.accountId, req.params.id)),
  );
  app.post('/v1/scenarios/runs/:id/score', { schema: { params: IdParams, response: replies(RunView) } }, async (req) =>
    toRunView(await runs.score(req.principal.accountId, req.params.id)),
  );
  app.post('/v1/scenarios/runs/:id/cancel', { schema: { params: IdParams, response: replies(RunView) } }, async (req) =>
    toRunView(await runs.cancel(req.principal.accountId, req.params.id)),
  );
  // Waits for the scoring (bounded by the scenario's scorer_timeout_sec); a client that leaves stops the wait, not the scoring.
  app.post('/v1/scenarios/runs/:id/complete', { schema: { params: IdParams, response: replies(RunView) } }, async (req, reply) =>
    toRunView(await runs.complete(req.principal.accountId, req.params.id, clientGone(reply))),
  );
  app.post(
    '/v1/scenarios/runs/:id/download_logs',
    { schema: { params: IdParams, response: ZipReplies }, config: { idempotent: false, access: 'read' } },
    async (req, reply) => {
      const run = await runs.get(req.principal.accountId, req.params.id);
      return reply
        .type('application/zip')
        .header('content-disposition', `attachment; filename="${run.id}-logs.zip"`)
        .send(runLogsZip(run, toRunView(run), readLogs));
    },
  );
}
