/**
 * Every authenticated route of the API, what a restricted key needs for it, and a request body that passes
 * validation (so a cross-account call reaches the handler, where only a 404 may come back). The route-table
 * test checks this list against /openapi.json: a new route fails the test until it is described here.
 */
import type { ResourceType } from '../../src/platform/auth/principal.js';

export type Level = 'read' | 'write';
export type Need = [ResourceType, Level];

export interface RouteCase {
  needs: Need[];
  body?: Record<string, unknown>;
  /** multipart/form-data upload instead of JSON. */
  upload?: boolean;
}

const DEVBOX_READ: Need[] = [['RESOURCE_TYPE_DEVBOXES', 'read']];
const DEVBOX_WRITE: Need[] = [['RESOURCE_TYPE_DEVBOXES', 'write']];
const BLUEPRINT_READ: Need[] = [['RESOURCE_TYPE_BLUEPRINTS', 'read']];
const BLUEPRINT_WRITE: Need[] = [['RESOURCE_TYPE_BLUEPRINTS', 'write']];
const SNAPSHOT_READ: Need[] = [['RESOURCE_TYPE_SNAPSHOTS', 'read']];
const SNAPSHOT_WRITE: Need[] = [['RESOURCE_TYPE_SNAPSHOTS', 'write']];
const BENCHMARK_READ: Need[] = [['RESOURCE_TYPE_BENCHMARKS', 'read']];
const BENCHMARK_WRITE: Need[] = [['RESOURCE_TYPE_BENCHMARKS', 'write']];
const TAKE_SNAPSHOT: Need[] = [
  ['RESOURCE_TYPE_SNAPSHOTS', 'write'],
  ['RESOURCE_TYPE_DEVBOXES', 'read'],
];

const SCENARIO_READ: Need[] = [['RESOURCE_TYPE_SCENARIOS', 'read']];
const SCENARIO_WRITE: Need[] = [['RESOURCE_TYPE_SCENARIOS', 'write']];
const SCENARIO_BODY = {
  name: 's',
  input_context: { problem_statement: 'p' },
  scoring_contract: { scoring_function_parameters: [{ name: 'f', weight: 1, scorer: { type: 'command_scorer', command: 'true' } }] },
};

/**
 * Authenticated routes outside /openapi.json (not the Runloop API's) that take any key of the operator's
 * (default) account, whatever its scopes, and refuse every other account's keys.
 */
export const OPERATOR_ROUTES = ['GET /metrics'];

export const ROUTES: Record<string, RouteCase> = {
  'GET /v1/accounts/me': { needs: [['RESOURCE_TYPE_ACCOUNT', 'read']] },
  'GET /v1/apikeys': { needs: [['RESOURCE_TYPE_ACCOUNT', 'read']] },
  'POST /v1/apikeys': { needs: [['RESOURCE_TYPE_ACCOUNT', 'write']], body: { name: 'k' } },
  'POST /v1/restricted_keys': { needs: [['RESOURCE_TYPE_ACCOUNT', 'write']], body: { scopes: [] } },
  'POST /v1/apikeys/{id}/delete': { needs: [['RESOURCE_TYPE_ACCOUNT', 'write']] },

  'POST /v1/devboxes': { needs: DEVBOX_WRITE, body: {} },
  'POST /v1/devboxes/create_and_await_running': { needs: DEVBOX_WRITE, body: {} },
  'GET /v1/devboxes': { needs: DEVBOX_READ },
  'GET /v1/devboxes/{id}': { needs: DEVBOX_READ },
  'POST /v1/devboxes/{id}': { needs: DEVBOX_WRITE, body: { name: 'renamed' } },
  'POST /v1/devboxes/{id}/wait_for_status': { needs: DEVBOX_READ, body: { statuses: ['shutdown'], timeout_seconds: 0 } },
  'GET /v1/devboxes/{id}/usage': { needs: DEVBOX_READ },
  'POST /v1/devboxes/{id}/shutdown': { needs: DEVBOX_WRITE },
  'POST /v1/devboxes/{id}/keep_alive': { needs: DEVBOX_WRITE },
  'POST /v1/devboxes/{id}/suspend': { needs: DEVBOX_WRITE },
  'POST /v1/devboxes/{id}/resume': { needs: DEVBOX_WRITE },
  'POST /v1/devboxes/{id}/enable_tunnel': { needs: DEVBOX_WRITE, body: {} },
  'POST /v1/devboxes/{id}/remove_tunnel': { needs: DEVBOX_WRITE },
  'POST /v1/devboxes/{id}/create_pty_tunnel': { needs: DEVBOX_WRITE },
  'POST /v1/devboxes/{id}/create_ssh_key': { needs: DEVBOX_WRITE },
  'GET /v1/devboxes/evictions/watch': { needs: DEVBOX_READ },

  'POST /v1/devboxes/{id}/execute': { needs: DEVBOX_WRITE, body: { command: 'true', command_id: 'c1' } },
  'POST /v1/devboxes/{id}/execute_async': { needs: DEVBOX_WRITE, body: { command: 'true' } },
  'POST /v1/devboxes/{id}/execute_sync': { needs: DEVBOX_WRITE, body: { command: 'true' } },
  'GET /v1/devboxes/{id}/executions/{execution_id}': { needs: DEVBOX_READ },
  'POST /v1/devboxes/{id}/executions/{execution_id}/wait_for_status': {
    needs: DEVBOX_READ,
    body: { statuses: ['completed'], timeout_seconds: 0 },
  },
  'POST /v1/devboxes/{id}/executions/{execution_id}/kill': { needs: DEVBOX_WRITE, body: {} },
  'POST /v1/devboxes/{id}/executions/{execution_id}/send_std_in': { needs: DEVBOX_WRITE, body: { text: 'x' } },
  'GET /v1/devboxes/{id}/executions/{execution_id}/stream_stdout_updates': { needs: DEVBOX_READ },
  'GET /v1/devboxes/{id}/executions/{execution_id}/stream_stderr_updates': { needs: DEVBOX_READ },
  'GET /v1/devboxes/{id}/logs': { needs: DEVBOX_READ },
  'GET /v1/devboxes/{id}/logs/tail': { needs: DEVBOX_READ },

  'POST /v1/devboxes/{id}/upload_file': { needs: DEVBOX_WRITE, upload: true },
  // Reading a box's files hands out its contents (secrets in /proc/<pid>/environ): write, not read.
  'POST /v1/devboxes/{id}/download_file': { needs: DEVBOX_WRITE, body: { path: 'f.txt' } },
  'POST /v1/devboxes/{id}/read_file_contents': { needs: DEVBOX_WRITE, body: { file_path: 'f.txt' } },
  'POST /v1/devboxes/{id}/write_file_contents': { needs: DEVBOX_WRITE, body: { file_path: 'f.txt', contents: 'x' } },

  'POST /v1/devboxes/{id}/snapshot_disk': { needs: TAKE_SNAPSHOT, body: {} },
  'POST /v1/devboxes/{id}/snapshot_disk_async': { needs: TAKE_SNAPSHOT, body: {} },
  'GET /v1/devboxes/disk_snapshots': { needs: SNAPSHOT_READ },
  'GET /v1/devboxes/disk_snapshots/{id}': { needs: SNAPSHOT_READ },
  'GET /v1/devboxes/disk_snapshots/{id}/status': { needs: SNAPSHOT_READ },
  'POST /v1/devboxes/disk_snapshots/{id}': { needs: SNAPSHOT_WRITE, body: { name: 'renamed' } },
  'POST /v1/devboxes/disk_snapshots/{id}/delete': { needs: SNAPSHOT_WRITE },

  'POST /v1/scenarios/scorers': { needs: SCENARIO_WRITE, body: { type: 'route_table', bash_script: 'echo 1' } },
  'GET /v1/scenarios/scorers': { needs: SCENARIO_READ },
  'GET /v1/scenarios/scorers/{id}': { needs: SCENARIO_READ },
  'POST /v1/scenarios/scorers/{id}': { needs: SCENARIO_WRITE, body: { type: 'route_table', bash_script: 'echo 1' } },
  'POST /v1/scenarios': { needs: SCENARIO_WRITE, body: SCENARIO_BODY },
  'GET /v1/scenarios': { needs: SCENARIO_READ },
  'GET /v1/scenarios/list_public': { needs: SCENARIO_READ },
  'GET /v1/scenarios/{id}': { needs: SCENARIO_READ },
  'POST /v1/scenarios/{id}': { needs: SCENARIO_WRITE, body: { name: 'renamed' } },
  'POST /v1/scenarios/{id}/archive': { needs: SCENARIO_WRITE },
  'POST /v1/scenarios/start_run': { needs: SCENARIO_WRITE, body: { scenario_id: 'scn_unknown' } },
  'GET /v1/scenarios/runs': { needs: SCENARIO_READ },
  'GET /v1/scenarios/runs/{id}': { needs: SCENARIO_READ },
  'POST /v1/scenarios/runs/{id}/score': { needs: SCENARIO_WRITE },
  'POST /v1/scenarios/runs/{id}/complete': { needs: SCENARIO_WRITE },
  'POST /v1/scenarios/runs/{id}/cancel': { needs: SCENARIO_WRITE },
  'POST /v1/scenarios/runs/{id}/download_logs': { needs: SCENARIO_READ },

  // Runloop's scopes have no secrets type: the account's governs them.
  'POST /v1/secrets': { needs: [['RESOURCE_TYPE_ACCOUNT', 'write']], body: { name: 'ROUTE_TABLE_SECRET', value: 'v' } },
  'GET /v1/secrets': { needs: [['RESOURCE_TYPE_ACCOUNT', 'read']] },
  'GET /v1/secrets/{name}': { needs: [['RESOURCE_TYPE_ACCOUNT', 'read']] },
  'POST /v1/secrets/{name}': { needs: [['RESOURCE_TYPE_ACCOUNT', 'write']], body: { value: 'v2' } },
  'POST /v1/secrets/{name}/delete': { needs: [['RESOURCE_TYPE_ACCOUNT', 'write']] },

  // No MCP scope either: the account's governs MCP configs; a box's hub token is a devbox write.
  'POST /v1/mcp-configs': {
    needs: [['RESOURCE_TYPE_ACCOUNT', 'write']],
    body: { name: 'route-table', endpoint: 'http://127.0.0.1:9/mcp', allowed_tools: ['*'] },
  },
  'GET /v1/mcp-configs': { needs: [['RESOURCE_TYPE_ACCOUNT', 'read']] },
  'GET /v1/mcp-configs/{id}': { needs: [['RESOURCE_TYPE_ACCOUNT', 'read']] },
  'POST /v1/mcp-configs/{id}': { needs: [['RESOURCE_TYPE_ACCOUNT', 'write']], body: { description: 'd' } },
  'POST /v1/mcp-configs/{id}/delete': { needs: [['RESOURCE_TYPE_ACCOUNT', 'write']] },
  'POST /v1/devboxes/{id}/create_mcp_token': { needs: DEVBOX_WRITE, body: { mcp_config: 'route-table', secret: 'S' } },

  'POST /v1/gateway-configs': {
    needs: [['RESOURCE_TYPE_ACCOUNT', 'write']],
    body: { name: 'g', endpoint: 'https://api.example.com', auth_mechanism: { type: 'bearer' } },
  },
  'GET /v1/gateway-configs': { needs: [['RESOURCE_TYPE_ACCOUNT', 'read']] },
  'GET /v1/gateway-configs/{id}': { needs: [['RESOURCE_TYPE_ACCOUNT', 'read']] },
  'POST /v1/gateway-configs/{id}': { needs: [['RESOURCE_TYPE_ACCOUNT', 'write']], body: { description: 'd' } },
  'POST /v1/gateway-configs/{id}/delete': { needs: [['RESOURCE_TYPE_ACCOUNT', 'write']] },
  'POST /v1/devboxes/{id}/create_gateway_token': { needs: DEVBOX_WRITE, body: { gateway: 'g', secret: 's' } },

  // No network-policy type either: what boxes reach is the devboxes' scope.
  'POST /v1/network-policies': { needs: DEVBOX_WRITE, body: { name: 'route-table-policy' } },
  'GET /v1/network-policies': { needs: DEVBOX_READ },
  'GET /v1/network-policies/{id}': { needs: DEVBOX_READ },
  'POST /v1/network-policies/{id}': { needs: DEVBOX_WRITE, body: { description: 'x' } },
  'POST /v1/network-policies/{id}/delete': { needs: DEVBOX_WRITE },

  'POST /v1/blueprints': { needs: BLUEPRINT_WRITE, body: { name: 'route-table-blueprint' } },
  'POST /v1/blueprints/preview': { needs: BLUEPRINT_WRITE, body: { name: 'route-table-blueprint' } },
  'GET /v1/blueprints': { needs: BLUEPRINT_READ },
  'GET /v1/blueprints/list_public': { needs: BLUEPRINT_READ },
  'GET /v1/blueprints/public/metadata/keys': { needs: BLUEPRINT_READ },
  'GET /v1/blueprints/public/metadata/keys/{key}/values': { needs: BLUEPRINT_READ },
  'GET /v1/blueprints/{id}': { needs: BLUEPRINT_READ },
  'GET /v1/blueprints/{id}/logs': { needs: BLUEPRINT_READ },
  'POST /v1/blueprints/{id}/delete': { needs: BLUEPRINT_WRITE },
  'POST /v1/objects': { needs: [['RESOURCE_TYPE_OBJECTS', 'write']], body: { name: 'route-table.txt', content_type: 'text' } },
  'GET /v1/objects': { needs: [['RESOURCE_TYPE_OBJECTS', 'read']] },
  'GET /v1/objects/list_public': { needs: [['RESOURCE_TYPE_OBJECTS', 'read']] },
  'GET /v1/objects/{id}': { needs: [['RESOURCE_TYPE_OBJECTS', 'read']] },
  // Runloop's scopes have no axon type: axons feed agents, so the agents' governs them.
  'POST /v1/axons': { needs: [['RESOURCE_TYPE_AGENTS', 'write']], body: { name: 'route-table' } },
  'GET /v1/axons': { needs: [['RESOURCE_TYPE_AGENTS', 'read']] },
  'GET /v1/axons/{id}': { needs: [['RESOURCE_TYPE_AGENTS', 'read']] },
  'POST /v1/axons/{id}': { needs: [['RESOURCE_TYPE_AGENTS', 'write']], body: { metadata: { k: 'v' } } },
  'DELETE /v1/axons/{id}': { needs: [['RESOURCE_TYPE_AGENTS', 'write']] },
  'POST /v1/axons/{id}/publish': { needs: [['RESOURCE_TYPE_AGENTS', 'write']], body: { event_type: 't', origin: 'USER_EVENT', payload: '{}', source: 's' } },
  'GET /v1/axons/{id}/events': { needs: [['RESOURCE_TYPE_AGENTS', 'read']] },
  'GET /v1/axons/{id}/subscribe/sse': { needs: [['RESOURCE_TYPE_AGENTS', 'read']] },
  'POST /v1/axons/{id}/sql/query': { needs: [['RESOURCE_TYPE_AGENTS', 'write']], body: { sql: 'SELECT 1' } },
  'POST /v1/axons/{id}/sql/batch': { needs: [['RESOURCE_TYPE_AGENTS', 'write']], body: { statements: [{ sql: 'SELECT 1' }] } },
  'GET /v1/objects/{id}/download': { needs: [['RESOURCE_TYPE_OBJECTS', 'read']] },
  'POST /v1/objects/{id}/complete': { needs: [['RESOURCE_TYPE_OBJECTS', 'write']] },
  'POST /v1/objects/{id}/delete': { needs: [['RESOURCE_TYPE_OBJECTS', 'write']] },

  // Runloop's scopes have no repositories type: the blueprints' governs them.
  'POST /v1/repositories': { needs: BLUEPRINT_WRITE, body: { owner: 'route', name: 'table' } },
  'GET /v1/repositories': { needs: BLUEPRINT_READ },
  'GET /v1/repositories/{id}': { needs: BLUEPRINT_READ },
  'POST /v1/repositories/{id}/delete': { needs: BLUEPRINT_WRITE },
  'POST /v1/repositories/{id}/inspect': { needs: BLUEPRINT_WRITE, body: {} },
  'POST /v1/repositories/{id}/refresh': { needs: BLUEPRINT_WRITE, body: {} },
  'GET /v1/repositories/{id}/inspections': { needs: BLUEPRINT_READ },
  'GET /v1/repositories/inspections/{id}': { needs: BLUEPRINT_READ },
  'POST /v1/repositories/inspections/{id}/add_user_manifest': { needs: BLUEPRINT_WRITE, body: { workspaces: [] } },
  'POST /v1/agents': {
    needs: [['RESOURCE_TYPE_AGENTS', 'write']],
    body: { name: 'route-table-agent', source: { type: 'pip', pip: { package_name: 'requests' } } },
  },
  'GET /v1/agents': { needs: [['RESOURCE_TYPE_AGENTS', 'read']] },
  'GET /v1/agents/list_public': { needs: [['RESOURCE_TYPE_AGENTS', 'read']] },
  'GET /v1/agents/devbox_counts': { needs: [['RESOURCE_TYPE_AGENTS', 'read']] },
  'GET /v1/agents/{id}': { needs: [['RESOURCE_TYPE_AGENTS', 'read']] },
  'POST /v1/agents/{id}/delete': { needs: [['RESOURCE_TYPE_AGENTS', 'write']] },
  'POST /v1/benchmarks': { needs: BENCHMARK_WRITE, body: { name: 'route-table-benchmark' } },
  'GET /v1/benchmarks': { needs: BENCHMARK_READ },
  'GET /v1/benchmarks/list_public': { needs: BENCHMARK_READ },
  'GET /v1/benchmarks/{id}': { needs: BENCHMARK_READ },
  'POST /v1/benchmarks/{id}': { needs: BENCHMARK_WRITE, body: { description: 'x' } },
  'POST /v1/benchmarks/{id}/scenarios': { needs: BENCHMARK_WRITE, body: {} },
  'GET /v1/benchmarks/{id}/definitions': { needs: BENCHMARK_READ },
  'POST /v1/benchmarks/start_run': { needs: BENCHMARK_WRITE, body: { benchmark_id: 'bmd_missing' } },
  'GET /v1/benchmark_runs': { needs: BENCHMARK_READ },
  'GET /v1/benchmark_runs/{id}': { needs: BENCHMARK_READ },
  'POST /v1/benchmark_runs/{id}/cancel': { needs: BENCHMARK_WRITE },
  'POST /v1/benchmark_runs/{id}/complete': { needs: BENCHMARK_WRITE },
  'GET /v1/benchmark_runs/{id}/scenario_runs': { needs: BENCHMARK_READ },
  'POST /v1/benchmark_jobs': { needs: BENCHMARK_WRITE, body: {} },
  'GET /v1/benchmark_jobs': { needs: BENCHMARK_READ },
  'GET /v1/benchmark_jobs/{id}': { needs: BENCHMARK_READ },
};

const BOUNDARY = 'devboxd-route-table';

/** A multipart upload of `hello` to f.txt, as the SDK sends it (path first). */
export const UPLOAD = {
  headers: { 'content-type': `multipart/form-data; boundary=${BOUNDARY}` },
  payload: [
    `--${BOUNDARY}\r\ncontent-disposition: form-data; name="path"\r\n\r\nf.txt\r\n`,
    `--${BOUNDARY}\r\ncontent-disposition: form-data; name="file"; filename="f.txt"\r\ncontent-type: application/octet-stream\r\n\r\nhello\r\n`,
    `--${BOUNDARY}--\r\n`,
  ].join(''),
};
