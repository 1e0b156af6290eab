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
