/**
 * What the dashboard's browser tests share: a local stack in this process (API, worker, recovery and the
 * dashboard on an in-process dynalite), Debian's Chromium driven by playwright-core, and pages that
 * record every console error, uncaught error, failed request and API request they make.
 */
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium, type Browser, type BrowserContext, type ConsoleMessage, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import { startStack, type LocalStack } from '../../../tools/local/stack.js';
import { demoTasks } from '../../../tasks/demo.js';
import { Logger } from '@aws-lambda-powertools/logger';
import { startTestDynamo, type TestDynamo } from '../../support/test-dynamo.js';

const require = createRequire(import.meta.url);
const CHROMIUM = process.env.LEASEHOLD_CHROMIUM ?? '/usr/bin/chromium';
export const SCREENSHOTS = resolve(import.meta.dirname, '../../../docs/screenshots');
/** Long enough for a loaded two-core machine: every wait is on the page's state, never a sleep. */
export const UI_TIMEOUT_MS = 30_000;

export interface TestStack {
  stack: LocalStack;
  url: string;
  close(): Promise<void>;
}

export async function startTestStack(name: string): Promise<TestStack> {
  const dynamo: TestDynamo = await startTestDynamo();
  const dataDir = await mkdtemp(join(tmpdir(), `leasehold-${name}-`));
  const stack = await startStack({
    env: {
      // Calmer than the other suites' FAST_STACK_ENV: a browser beside the stack loads the two cores, and
      // a DynamoDB call that outlives its deadline is a 500 the page would show (and the test fail on).
      LEASEHOLD_PORT: '0',
      LEASEHOLD_LEASE_TIMEOUT_MS: '12000',
      LEASEHOLD_HEARTBEAT_INTERVAL_MS: '3000',
      LEASEHOLD_REQUEST_DEADLINE_MS: '2500',
      LEASEHOLD_CLOCK_SKEW_MS: '200',
      LEASEHOLD_DRAIN_MARGIN_MS: '6000',
      // The worker hears this process's enqueues at once: its polls need not load the cores meanwhile.
      LEASEHOLD_POLL_INTERVAL_MS: '500',
      LEASEHOLD_RECOVERY_INTERVAL_MS: '2000',
      LEASEHOLD_DYNAMODB_ENDPOINT: dynamo.endpoint,
      LEASEHOLD_TABLE: `${name}-tasks`,
      LEASEHOLD_DATA_DIR: dataDir,
      POWERTOOLS_LOG_LEVEL: 'ERROR',
    },
    roles: { api: true, worker: true, recovery: true },
    definitions: demoTasks,
    // Errors only: a 5xx the page sees is explained in the test's output.
    logger: new Logger({ serviceName: 'dashboard-browser-test', logLevel: 'ERROR' }),
  });
  return {
    stack,
    url: stack.apiUrl!,
    close: async () => {
      await stack.stop();
      await dynamo.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM))
    throw new Error(
      `${CHROMIUM} is missing: apt-get install -y --no-install-recommends chromium (or set LEASEHOLD_CHROMIUM)`,
    );
  mkdirSync(SCREENSHOTS, { recursive: true });
  return chromium.launch({ executablePath: CHROMIUM });
}

export interface DashboardPage {
  page: Page;
  context: BrowserContext;
  /** Console errors, uncaught errors, failed requests and requests that left 127.0.0.1. */
  problems: string[];
  /** `GET /stats` ... : every request the page made to the API (not its own files), in order. */
  apiRequests: string[];
  /** Console errors matching this are expected (a refused action's 4xx is logged by Chromium). */
  expectConsoleError(pattern: RegExp): void;
  close(): Promise<void>;
}

/** Opens the dashboard at `baseUrl` (`/?poll=<ms>` + `hash`), at the screenshots' fixed viewport. */
export async function openDashboard(
  browser: Browser,
  baseUrl: string,
  {
    pollMs = 500,
    hash = '',
    signInUrl,
  }: {
    pollMs?: number;
    hash?: string;
    /** `leasehold dashboard`'s one-time link, opened first. */ signInUrl?: string;
  } = {},
): Promise<DashboardPage> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const problems: string[] = [];
  const apiRequests: string[] = [];
  const expected: RegExp[] = [];
  // Offline: anything not on this machine fails the test.
  await context.route(
    (url) => url.hostname !== '127.0.0.1',
    (route) => {
      problems.push(`request left the machine: ${route.request().url()}`);
      return route.abort();
    },
  );
  const page = await context.newPage();
  page.on('console', (m: ConsoleMessage) => {
    if (m.type() !== 'error') return;
    const text = `${m.text()} ${m.location().url}`;
    if (!expected.some((p) => p.test(text))) problems.push(`console error: ${text}`);
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('requestfailed', (r) => problems.push(`request failed: ${r.url()} ${r.failure()?.errorText}`));
  page.on('request', (r) => {
    const url = new URL(r.url());
    if (url.pathname !== '/' && !url.pathname.startsWith('/_dashboard/'))
      apiRequests.push(`${r.method()} ${url.pathname}`);
  });
  // The link's cookie lands in the context's jar; not opened in the page, whose first load would start
  // polling that the next navigation aborts (failed requests).
  if (signInUrl) await context.request.get(signInUrl, { maxRedirects: 0 });
  await page.goto(`${baseUrl.replace(/\/$/, '')}/?poll=${pollMs}${hash}`);
  await page.getByText('Acting as').waitFor({ timeout: UI_TIMEOUT_MS });
  return {
    page,
    context,
    problems,
    apiRequests,
    expectConsoleError: (pattern) => expected.push(pattern),
    close: () => context.close(),
  };
}

export interface DashboardSuite {
  stack: TestStack;
  browser: Browser;
  /** Opens the dashboard (of this file's stack unless `url`), closed after the file. */
  open(options?: Parameters<typeof openDashboard>[2], url?: string): Promise<DashboardPage>;
}

/** One local stack and one Chromium for a test file, started before its tests and closed after them; pages close after each test. */
export function dashboardSuite(name: string): DashboardSuite {
  const opened: DashboardPage[] = [];
  const suite = {
    open: async (options: Parameters<typeof openDashboard>[2] = {}, url?: string) => {
      const dashboard = await openDashboard(suite.browser, url ?? suite.stack.url, options);
      opened.push(dashboard);
      return dashboard;
    },
  } as DashboardSuite;
  beforeAll(async () => {
    [suite.stack, suite.browser] = await Promise.all([startTestStack(name), launchChromium()]);
  });
  // A page left open keeps polling: closed after its test, so it loads neither the stack nor the next test.
  afterEach(async () => {
    for (const d of opened.splice(0)) await d.close().catch(() => {});
  });
  afterAll(async () => {
    await suite.browser?.close();
    await suite.stack?.close();
  });
  return suite;
}

/** How many refreshes the page has finished (the header's data-refreshes). */
export async function refreshCount(page: Page): Promise<number> {
  return Number(await page.locator('[data-refreshes]').getAttribute('data-refreshes'));
}

/** Waits until the page has finished `n` more refreshes than now. */
export async function waitForRefreshes(page: Page, n: number): Promise<void> {
  const target = (await refreshCount(page)) + n;
  await expect.poll(() => refreshCount(page), { timeout: UI_TIMEOUT_MS }).toBeGreaterThanOrEqual(target);
}

/** axe-core's serious and critical violations on the page as it is now. */
export async function seriousAxeViolations(page: Page): Promise<string[]> {
  // Evaluated, not added as a <script>: the page's Content-Security-Policy refuses inline scripts, and
  // stays on to show the page runs under it. (A string runs as written: no DOM types in this file.)
  await page.evaluate(readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8'));
  const violations: { id: string; impact: string; help: string; nodes: { target: string[] }[] }[] =
    await page.evaluate('axe.run().then((r) => r.violations)');
  return violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.impact} ${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`);
}

/** The focused element's tag and trimmed text, e.g. "BUTTON Cancel task". */
export async function focused(page: Page): Promise<string> {
  return page.evaluate('`${document.activeElement?.tagName} ${document.activeElement?.textContent?.trim()}`');
}

/** Tells the page it is hidden or visible again, as a switch of tabs would. */
export async function setVisibility(page: Page, state: 'hidden' | 'visible'): Promise<void> {
  await page.evaluate(`
    Object.defineProperty(document, 'visibilityState', { value: '${state}', configurable: true });
    document.dispatchEvent(new Event('visibilitychange'));
  `);
}

/** Answers the open confirm dialog with its action button. */
export async function confirmDialog(page: Page, action: string): Promise<void> {
  const dialog = page.getByRole('dialog');
  await dialog.waitFor({ timeout: UI_TIMEOUT_MS });
  await dialog.getByRole('button', { name: action, exact: true }).click();
  await dialog.waitFor({ state: 'hidden', timeout: UI_TIMEOUT_MS });
}
