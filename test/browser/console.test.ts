import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { launchChromium, PageProblems, screenshot, seriousA11yViolations } from '../helpers/browser.js';
import { ADMIN_KEY, startTestServer, type TestServer } from '../helpers/server.js';

/**
 * The web console in a real browser (Debian's Chromium, headless), against a real server: sign in, then what
 * a user does first. Every page is checked as it is opened: no console error or exception, no serious
 * accessibility violation (axe-core), and a screenshot under test-results/screenshots/.
 */
let s: TestServer;
let browser: Browser;
let page: Page;
let problems: PageProblems;

before(async () => {
  [s, browser] = await Promise.all([startTestServer(), launchChromium()]);
  page = await browser.newPage({ viewport: { width: 1280, height: 860 }, acceptDownloads: true });
  problems = new PageProblems(page);
});
after(async () => {
  await browser?.close();
  await s?.stop();
});

/** Opens a console path and waits until the page has drawn past its loading state. */
async function open(path: string): Promise<void> {
  await page.goto(`${s.url}${path}`);
  await page.locator('main h1').first().waitFor();
  await page.waitForFunction(() => !document.querySelector('[aria-busy="true"]'), undefined, { timeout: 10_000 });
}

/** The checks every page gets once it has drawn. */
async function check(name: string): Promise<void> {
  problems.assertClean(name);
  assert.deepEqual(await seriousA11yViolations(page), [], `${name}: accessibility`);
  await screenshot(page, name);
}

test('sign-in shows the server refusing a wrong key, then signs in with a good one', async () => {
  await page.goto(`${s.url}/`);
  await check('sign-in');
  await page.getByLabel('API key').fill('ak_not_a_key');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('alert').waitFor();
  assert.match(await page.getByRole('alert').innerText(), /key/i);
  // The refused sign-in is a 401 the page asked for: the browser logs the failed load.
  problems.assertClean('sign-in refused', [/401/]);
  await page.getByLabel('API key').fill(ADMIN_KEY);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Devboxes', level: 1 }).waitFor();
  assert.equal(await page.evaluate(() => sessionStorage.getItem('devboxd.apiKey')), ADMIN_KEY);
  assert.equal(await page.evaluate(() => localStorage.length), 0);
});

const EMPTY_PAGES = [
  '/devboxes',
  '/devboxes/new',
  '/snapshots',
  '/blueprints',
  '/secrets',
  '/network-policies',
  '/mcp-configs',
  '/gateway-configs',
  '/objects',
  '/axons',
  '/agents',
  '/benchmarks',
  '/scenarios',
  '/api-keys',
];

test('every section opens clean on a new account, with an empty state that says what to do', async () => {
  for (const path of EMPTY_PAGES) {
    await open(path);
    await check(`empty${path.replace(/\//g, '-')}`);
  }
});

test('create a box from the console, type `echo hi` into its terminal, and see hi', async () => {
  await open('/devboxes/new');
  await page.getByLabel(/^Name/).fill('from-console');
  await page.getByRole('button', { name: 'Create devbox' }).click();
  await page.getByRole('heading', { name: 'from-console', level: 1 }).waitFor();
  await page.locator('main .status-running').first().waitFor({ timeout: 30_000 });
  const id = /\/devboxes\/([^/?]+)$/.exec(new URL(page.url()).pathname)?.[1];
  assert.ok(id?.startsWith('dbx_'), page.url());
  const box = await s.client().devboxes.retrieve(id!);
  assert.deepEqual([box.name, box.status], ['from-console', 'running']);
  await check('devbox-detail');

  await page.getByRole('link', { name: 'Terminal' }).click();
  const term = page.locator('.xterm-rows');
  await term.waitFor();
  await page.locator('.xterm-helper-textarea').focus();
  // The prompt first: typing before the shell reads would be echoed by the tty alone.
  await page.waitForFunction(() => /[$#]\s*$/.test(document.querySelector('.xterm-rows')?.textContent ?? ''), undefined, { timeout: 15_000 });
  await page.keyboard.type('echo h""i');
  await page.keyboard.press('Enter');
  // "h""i" is what was typed; only the shell's output reads "hi" on a line of its own.
  await page.waitForFunction(() => [...document.querySelectorAll('.xterm-rows > div')].some((r) => r.textContent?.trim() === 'hi'), undefined, {
    timeout: 15_000,
  });
  // Tab is the shell's; Escape then Tab moves focus out of the terminal, as the page says.
  await page.keyboard.press('Escape');
  await page.keyboard.press('Tab');
  assert.equal(await page.evaluate(() => document.activeElement?.classList.contains('xterm-helper-textarea')), false);
  await check('devbox-terminal');
});

test('upload a file into a box from the files page, see it listed, download it byte for byte', async () => {
  const api = s.client();
  const box = await api.devboxes.createAndAwaitRunning({ name: 'files' });
  const bytes = Buffer.from(Array.from({ length: 300_000 }, (_, i) => (i * 7919) % 251));
  await open(`/devboxes/${box.id}/files`);
  await check('devbox-files');
  await page.getByLabel(/Files to upload/).setInputFiles({ name: 'data.bin', mimeType: 'application/octet-stream', buffer: bytes });
  await page.getByRole('button', { name: 'Upload', exact: true }).click();
  await page.getByRole('status').filter({ hasText: 'Uploaded data.bin' }).waitFor();
  assert.deepEqual(Buffer.from(await (await api.devboxes.downloadFile(box.id, { path: 'data.bin' })).arrayBuffer()), bytes);

  const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download data.bin' }).click()]);
  assert.equal(download.suggestedFilename(), 'data.bin');
  const stream = await download.createReadStream();
  const got: Buffer[] = [];
  for await (const chunk of stream) got.push(chunk as Buffer);
  assert.deepEqual(Buffer.concat(got), bytes);
  problems.assertClean('files');
});

test('with data in the account, every list and detail page opens clean and is screenshotted', async () => {
  const api = s.client();
  const box = await api.devboxes.createAndAwaitRunning({ name: 'populated' });
  const exec = await api.devboxes.executeAsync(box.id, { command: 'for i in 1 2 3; do echo line $i; done; echo oops >&2; exit 3' });
  await api.devboxes.executions.awaitCompleted(box.id, exec.execution_id);
  const snapshot = await api.devboxes.snapshotDisk(box.id, { name: 'populated-snap' });
  await api.secrets.create({ name: 'POPULATED_TOKEN', value: 'not shown anywhere' });
  await api.networkPolicies.create({ name: 'populated-policy', allowed_hostnames: ['example.test'] });
  await api.mcpConfigs.create({ name: 'populated-mcp', endpoint: 'https://mcp.example.test/mcp', allowed_tools: ['*'] });
  await api.post('/v1/apikeys', { body: { name: 'populated-key' } });
  const obj = await api.objects.create({ name: 'notes.txt', content_type: 'text' });
  await fetch(obj.upload_url!, { method: 'PUT', body: 'hello' });
  await api.objects.complete(obj.id);
  const blueprint = await api.blueprints.createAndAwaitBuildCompleted({
    name: 'populated-blueprint',
    dockerfile: 'FROM runloop:runloop/starter-x86_64\nRUN echo built-in-the-console-test > /opt/built.txt',
  });

  const pages: [string, string][] = [
    ['/devboxes', 'devboxes'],
    [`/devboxes/${box.id}/executions/${exec.execution_id}`, 'devbox-execution'],
    ['/snapshots', 'snapshots'],
    ['/secrets', 'secrets'],
    ['/network-policies', 'network-policies'],
    ['/mcp-configs', 'mcp-configs'],
    ['/gateway-configs', 'gateway-configs'],
    ['/objects', 'objects'],
    ['/api-keys', 'api-keys'],
    ['/blueprints', 'blueprints'],
    [`/blueprints/${blueprint.id}`, 'blueprint-detail'],
  ];
  for (const [path, name] of pages) {
    await open(path);
    await check(name);
  }
  // The execution's page shows what it printed, stderr told apart from stdout, and how it ended.
  await open(`/devboxes/${box.id}/executions/${exec.execution_id}`);
  await page.getByText('The output is complete.').waitFor();
  const text = await page.locator('main').innerText();
  assert.match(text, /line 1\s+line 2\s+line 3/);
  assert.match(text, /oops/);
  assert.match(text, /\b3\b/);
  // A built blueprint's page shows its build log.
  await open(`/blueprints/${blueprint.id}`);
  await page.locator('[aria-label="Build log"]').filter({ hasText: 'built-in-the-console-test' }).waitFor();
  // A secret's value is never on the page.
  await open('/secrets');
  assert.doesNotMatch(await page.content(), /not shown anywhere/);
  assert.match(await page.locator('main').innerText(), /POPULATED_TOKEN/);
  await open('/snapshots');
  assert.match(await page.locator('main').innerText(), new RegExp(snapshot.name || snapshot.id));
  // A box from the snapshot: its row's link opens the create form with the snapshot chosen.
  await api.devboxes.diskSnapshots.awaitCompleted(snapshot.id);
  await page
    .getByRole('link', { name: /Create devbox/ })
    .first()
    .click();
  await page.getByRole('heading', { name: 'Create a devbox', level: 1 }).waitFor();
  assert.equal(await page.getByLabel('A disk snapshot').isChecked(), true);
  await page.getByLabel(/^Name/).fill('from-snapshot');
  await page.getByRole('button', { name: 'Create devbox' }).click();
  await page.getByRole('heading', { name: 'from-snapshot', level: 1 }).waitFor();
  const made = (await api.devboxes.list({ search: 'from-snapshot' } as never)).devboxes[0];
  assert.equal(made?.snapshot_id, snapshot.id);
});
