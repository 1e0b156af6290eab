import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import type { HTTPMethods } from 'fastify';
import { parse } from 'yaml';
import { buildFastApp, type FastApp } from '../helpers/app.js';
import { ROOT } from '../helpers/paths.js';
import { exposition, type Selector, selectors } from '../helpers/promql.js';

/**
 * The Grafana dashboard and the Prometheus alerts in deploy/ read only what the server's /metrics exports: every
 * series they select, every label they match on, every route they name. A metric renamed or a route moved fails
 * here, not on an operator's empty panel.
 */
interface Target {
  expr: string;
  refId: string;
}
interface Panel {
  id: number;
  type: string;
  title: string;
  gridPos: { h: number; w: number; x: number; y: number };
  datasource?: { type: string; uid: string };
  targets?: Target[];
}
interface Dashboard {
  title: string;
  uid: string;
  schemaVersion: number;
  panels: Panel[];
  templating: { list: { name: string; type: string; query: unknown }[] };
}

const read = (file: string) => fs.readFileSync(path.join(ROOT, file), 'utf8');
const dashboard = JSON.parse(read('deploy/grafana/devboxd-dashboard.json')) as Dashboard;
const alerts = parse(read('deploy/prometheus/devboxd-alerts.yml')) as { groups: { rules: { alert: string; expr: string }[] }[] };
/** Labels Prometheus adds to every series it scrapes. */
const TARGET_LABELS = new Set(['job', 'instance']);

let f: FastApp;
let exported: Map<string, Set<string>>;
before(async () => {
  f = await buildFastApp();
  // A create and a command, so the request metrics have series with their labels.
  const box = (await f.call({ method: 'POST', url: '/v1/devboxes/create_and_await_running', payload: {} })).json() as { id: string };
  await f.call({ method: 'POST', url: `/v1/devboxes/${box.id}/execute_sync`, payload: { command: 'true' } });
  const res = await f.call({ method: 'GET', url: '/metrics' });
  assert.equal(res.statusCode, 200);
  exported = exposition(res.body);
});
after(() => f?.close());

/** Why `sel` does not fit what the server exports, or nothing. `up` is Prometheus's own. */
function misfit(sel: Selector): string | undefined {
  const labels = sel.name === 'up' ? new Set<string>() : exported.get(sel.name);
  if (!labels) return `${sel.name} is not exported by /metrics`;
  const method = sel.matchers.find((m) => m.label === 'method' && m.op === '=')?.value;
  for (const m of sel.matchers) {
    if (!TARGET_LABELS.has(m.label) && !labels.has(m.label)) return `${sel.name} has no label ${m.label}`;
    // A route named outright (or an alternation of them) must be one the server has.
    if (m.label !== 'route' || (m.op !== '=' && m.op !== '=~') || !/^[\w/:.-]+(\|[\w/:.-]+)*$/.test(m.value)) continue;
    for (const url of m.value.split('|')) {
      const methods: HTTPMethods[] = method ? [method as HTTPMethods] : ['GET', 'POST'];
      if (!methods.some((verb) => f.app.hasRoute({ method: verb, url }))) return `no route ${method ?? ''} ${url}`.replace('  ', ' ');
    }
  }
  return undefined;
}

const exprs = () => [
  ...dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => ({ where: `panel "${p.title}" ${t.refId}`, expr: t.expr }))),
  ...alerts.groups.flatMap((g) => g.rules.map((r) => ({ where: `alert ${r.alert}`, expr: r.expr }))),
];

test('every series, label and route the dashboard and the alerts select is what the server exports', () => {
  const problems: string[] = [];
  for (const { where, expr } of exprs()) {
    const found = selectors(expr);
    if (!found.length) problems.push(`${where}: selects nothing: ${expr}`);
    for (const sel of found) {
      const why = misfit(sel);
      if (why) problems.push(`${where}: ${why}`);
    }
  }
  assert.deepEqual(problems, []);
});

test("every devboxd metric is on the dashboard and in docs/operating.md's list", () => {
  const used = new Set(exprs().flatMap(({ expr }) => selectors(expr).map((s) => s.name.replace(/_(bucket|sum|count)$/, ''))));
  const doc = read('docs/operating.md');
  const families = [...exported.keys()].filter((n) => n.startsWith('devboxd_')).map((n) => n.replace(/_(bucket|sum|count)$/, ''));
  assert.ok(families.length >= 2);
  for (const name of new Set(families)) {
    assert.ok(used.has(name), `${name} is exported but no panel or alert reads it`);
    assert.ok(doc.includes(`\`${name}\``), `${name} is exported but docs/operating.md does not name it`);
  }
});

test('the scrape key docs/operating.md makes (restricted, no grants) reads /metrics and nothing else', async () => {
  const made = await f.call({ method: 'POST', url: '/v1/restricted_keys', payload: { name: 'prometheus', scopes: [] } });
  assert.equal(made.statusCode, 200, made.body);
  const key = (made.json() as { key_secret: string }).key_secret;
  assert.equal((await f.call({ method: 'GET', url: '/metrics', key })).statusCode, 200);
  assert.equal((await f.call({ method: 'GET', url: '/v1/devboxes', key })).statusCode, 403);
});

test('the dashboard is one Grafana can import: variables, panels on a 24-column grid, queries on the chosen data source', () => {
  assert.equal(dashboard.uid, 'devboxd');
  assert.ok(dashboard.title && dashboard.schemaVersion >= 36);
  const vars = new Map(dashboard.templating.list.map((v) => [v.name, v]));
  assert.equal(vars.get('datasource')?.type, 'datasource');
  assert.equal(vars.get('datasource')?.query, 'prometheus');
  assert.ok(vars.has('job') && vars.has('instance'));
  const ids = new Set<number>();
  const cells = new Map<string, string>();
  for (const p of dashboard.panels) {
    assert.ok(!ids.has(p.id), `panel id ${p.id} twice`);
    ids.add(p.id);
    const { h, w, x, y } = p.gridPos;
    assert.ok([h, w, x, y].every(Number.isInteger) && h >= 1 && w >= 1 && x >= 0 && x + w <= 24, `panel "${p.title}" is off the grid`);
    for (let r = y; r < y + h; r++) {
      for (let c = x; c < x + w; c++) {
        const other = cells.get(`${r},${c}`);
        assert.equal(other, undefined, `panels "${other}" and "${p.title}" overlap`);
        cells.set(`${r},${c}`, p.title);
      }
    }
    if (p.type === 'row') continue;
    assert.ok(['timeseries', 'stat'].includes(p.type), `panel "${p.title}" is a ${p.type}`);
    assert.deepEqual(p.datasource, { type: 'prometheus', uid: '${datasource}' });
    assert.ok(p.targets?.length, `panel "${p.title}" has no query`);
    assert.equal(new Set(p.targets!.map((t) => t.refId)).size, p.targets!.length, `panel "${p.title}" repeats a refId`);
    for (const t of p.targets!)
      assert.match(t.expr, /\{job=~"\$job", instance=~"\$instance"/, `panel "${p.title}" ${t.refId} ignores the job and instance variables`);
  }
});

test('devboxd_devboxes counts the boxes of every account by status, every status present', async () => {
  const count = async (status: string) => {
    const text = (await f.call({ method: 'GET', url: '/metrics' })).body;
    return Number(new RegExp(`^devboxd_devboxes\\{status="${status}"\\} (\\d+)$`, 'm').exec(text)?.[1]);
  };
  const [running, failure] = [await count('running'), await count('failure')];
  assert.ok(Number.isInteger(running) && Number.isInteger(failure), 'every status is a series, 0 included');
  await f.call({ method: 'POST', url: '/v1/devboxes/create_and_await_running', payload: {} });
  assert.equal(await count('running'), running + 1);
});
