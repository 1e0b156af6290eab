import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type Runloop from '@runloop/api-client';
import type { Browser, Page } from 'playwright-core';
import { launchChromium, PageProblems, screenshot, seriousA11yViolations } from '../helpers/browser.js';
import { ADMIN_KEY, startTestServer, type TestServer } from '../helpers/server.js';

/**
 * The console's live pages in a real browser against a real server, driven as a user would: the built-in
 * benchmark started from its page with its scenarios' states and scores arriving until it ends and its score
 * charted; an axon created, an event published and one arriving live, SQL run.
 */
let s: TestServer;
let api: Runloop;
let browser: Browser;
let page: Page;
let problems: PageProblems;

before(async () => {
  [s, browser] = await Promise.all([startTestServer(), launchChromium()]);
  api = s.client();
  page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
  problems = new PageProblems(page);
  page.on('dialog', (d) => void d.accept());
  await page.goto(`${s.url}/`);
  await page.getByLabel('API key').fill(ADMIN_KEY);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Devboxes', level: 1 }).waitFor();
});
after(async () => {
  await browser?.close();
  await s?.stop();
});

/** Follows a link of the console (its router, no reload), then waits for the page's heading. */
async function goTo(path: string, heading: string | RegExp): Promise<void> {
  await page.evaluate((u) => {
    history.pushState(null, '', u);
    dispatchEvent(new PopStateEvent('popstate'));
  }, path);
  await page.getByRole('heading', { name: heading, level: 1 }).waitFor();
}

async function check(name: string, expected: RegExp[] = []): Promise<void> {
  problems.assertClean(name, expected);
  assert.deepEqual(await seriousA11yViolations(page), [], `${name}: accessibility`);
  await screenshot(page, name);
}

test('the built-in benchmark runs from its page: each scenario state and score arrives, the run ends, its score is charted', async () => {
  await goTo('/benchmarks', 'Benchmarks');
  const row = page.getByRole('row').filter({ hasText: 'devboxd-starter' });
  await row.getByRole('button', { name: 'Start a run' }).click();
  await page.waitForURL(/\/benchmark-runs\/bmr_/);
  const runId = page.url().split('/').pop()!;
  const scenarioRows = page.locator('tbody tr');
  await page.waitForFunction(() => document.querySelectorAll('tbody tr').length === 3, undefined, { timeout: 30_000 });
  assert.deepEqual(await scenarioRows.locator('.status').allInnerTexts(), ['running', 'running', 'running']);
  await check('benchmark-run-running');

  // The "agent": fixes the Python task in its box, as the README's walk-through does.
  const { scenarios } = await api.benchmarks.definitions((await api.benchmarkRuns.retrieve(runId)).benchmark_id!);
  const mean = scenarios.find((x) => x.name === 'starter-python-mean')!;
  const runs = (await api.benchmarkRuns.listScenarioRuns(runId)).runs;
  const meanRun = runs.find((r) => r.scenario_id === mean.id)!;
  await api.devboxes.awaitRunning(meanRun.devbox_id);
  await api.devboxes.executeSync(meanRun.devbox_id, { command: "cd calc && sed -i 's/len(xs) + 1/len(xs)/' calc.py" });

  // Each row scored and completed from the page; the table follows without a reload.
  for (let i = 0; i < 3; i++) {
    await page.locator('td').getByRole('button', { name: 'Score and complete' }).first().click();
    await page.waitForFunction((n) => document.querySelectorAll('tbody .status-completed').length >= n, i + 1, { timeout: 60_000 });
  }
  await page.locator('dd .status-completed').waitFor({ timeout: 30_000 });
  const byName = Object.fromEntries(
    await scenarioRows.evaluateAll((rows) =>
      rows.map((r) => [(r as HTMLTableRowElement).cells[0]!.textContent, (r as HTMLTableRowElement).cells[2]!.textContent]),
    ),
  );
  assert.deepEqual(byName, { 'starter-python-mean': '1.00', 'starter-shell-wordcount': '0.00', 'starter-python-slugify': '0.00' });
  assert.match((await page.locator('dl').textContent()) ?? '', /0\.33/);
  await check('benchmark-run-completed');

  await page.getByRole('link', { name: 'Benchmark devboxd-starter' }).click();
  await page.getByRole('heading', { name: 'devboxd-starter', level: 1 }).waitFor();
  await page.locator('figure canvas').waitFor();
  assert.match((await page.locator('figcaption').textContent()) ?? '', /1 scored run; latest 0\.33/);
  await check('benchmark-detail-charted');
});

test('an axon: created from the list, an event published and one from elsewhere arriving live, SQL run', async () => {
  await goTo('/axons', 'Axons');
  await page.getByRole('button', { name: 'Create axon' }).click();
  await page.getByRole('dialog').getByLabel('Name (optional)').fill('console-axon');
  await page.getByRole('dialog').getByRole('button', { name: 'Create' }).click();
  await page.getByRole('heading', { name: 'console-axon', level: 1 }).waitFor();
  await page.getByText('Live: new events appear').waitFor();
  const axonId = page.url().split('/').pop()!;

  await page.getByRole('button', { name: 'Publish' }).click();
  await page.getByText('Published as event 1.').waitFor();
  await api.axons.publish(axonId, { event_type: 'push', source: 'github', origin: 'EXTERNAL_EVENT', payload: '{"ref":"main"}' });
  await page.locator('tbody tr', { hasText: 'github' }).waitFor({ timeout: 5_000 });
  assert.equal(await page.locator('tbody tr').first().locator('td').first().textContent(), '2');

  await page.getByRole('button', { name: 'Run' }).click();
  await page.locator('table.sql-result td').first().waitFor();
  assert.equal(await page.locator('table.sql-result td').first().textContent(), '1');
  await check('axon-detail');

  await page.getByLabel(/^SQL/).fill('PRAGMA user_version');
  await page.getByRole('button', { name: 'Run' }).click();
  await page.getByRole('alert').filter({ hasText: 'PRAGMA' }).waitFor();
  await check('axon-sql-refused', [/400/]);
});
