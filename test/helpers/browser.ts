import assert from 'node:assert/strict';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { ROOT } from './paths.js';

/** Debian's Chromium, installed by `scripts/setup.sh --test` (npm test). */
export const CHROMIUM = process.env.DEVBOXD_TEST_CHROMIUM ?? '/usr/bin/chromium';

/** Where the browser tests write a screenshot of every page; README names it, CI keeps it. */
export const SCREENSHOTS = path.join(ROOT, 'test-results', 'screenshots');

/**
 * Headless Chromium with nothing of its own running: no sandbox (the tests run as root), and none of its
 * background connections (updates, sync, safe browsing), which this machine's closed network would refuse
 * and the tests must not make.
 */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--disable-dev-shm-usage',
    ],
  });
}

/**
 * What a page said that a user would count as broken: console errors and uncaught exceptions. A test fails
 * on any (`assertClean`), except those it names as expected (a 4xx it provoked shows as a failed load).
 */
export class PageProblems {
  readonly seen: string[] = [];

  constructor(page: Page) {
    page.on('console', (m) => {
      if (m.type() === 'error') this.seen.push(`console: ${m.text()} (${m.location().url})`);
    });
    page.on('pageerror', (e) => this.seen.push(`exception: ${e.message}`));
  }

  /** Fails with what was seen; `expected` matches messages a test provoked on purpose, which are dropped. */
  assertClean(where: string, expected: RegExp[] = []): void {
    const left = this.seen.filter((s) => !expected.some((re) => re.test(s)));
    this.seen.length = 0;
    assert.deepEqual(left, [], `${where}: the page reported errors`);
  }
}

const axeSource = fs.readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: unknown[] }[];
}

/**
 * axe-core's WCAG 2 A/AA rules on the page as it stands. Evaluated through the DevTools protocol, which the
 * console's CSP (scripts from its own origin only) does not block, so the page is checked as served.
 * Returns the serious and critical violations, described.
 */
export async function seriousA11yViolations(page: Page): Promise<string[]> {
  await page.evaluate(`${axeSource}\n;undefined`);
  const violations = (await page.evaluate(
    "axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] } }).then((r) => r.violations)",
  )) as AxeViolation[];
  return violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map(
      (v) =>
        `${v.id} (${v.impact}): ${v.help} at ${v.nodes
          .map((n) => JSON.stringify(n.target))
          .slice(0, 3)
          .join(', ')}`,
    );
}

/** A full-page screenshot named after the page, under SCREENSHOTS. */
export async function screenshot(page: Page, name: string): Promise<void> {
  fs.mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });
}
