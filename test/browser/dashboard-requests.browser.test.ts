/**
 * What an open dashboard costs the API: each refresh is GET /stats plus the open view's one read (two on
 * a schedule's page), the same with 3 tasks as with 300: nothing is read per task. Refreshes run on
 * their own every few seconds while the page is visible, and stop while it is hidden.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { http } from '../support/stack-process.js';
import {
  dashboardSuite,
  refreshCount,
  setVisibility,
  UI_TIMEOUT_MS,
  waitForRefreshes,
} from './support/dashboard-browser.js';

const suite = dashboardSuite('dashboard-requests');

beforeAll(async () => {
  const schedule = await http(suite.stack.url, 'PUT', '/schedules/counted', {
    expression: 'rate(1 day)',
    task: { type: 'demo.echo' },
  });
  expect(schedule.status).toBe(201);
});

/** Tasks that stay QUEUED (due in an hour), so the counts hold still while the page is measured. */
async function enqueueWaiting(n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i += 100) {
    const tasks = Array.from({ length: Math.min(100, n - i) }, (_, k) => ({
      type: 'demo.echo',
      payload: { n: i + k },
      delaySeconds: 3600,
    }));
    const { status, body } = await http(suite.stack.url, 'POST', '/tasks/batch', { tasks });
    expect(status).toBe(200);
    expect(body.failed).toBe(0);
    ids.push(...body.results.map((r: any) => r.task.id));
  }
  return ids;
}

const REFRESHES = 3;

/** The API requests of each of REFRESHES refreshes asked for with "Refresh now", on the view at `hash`. */
async function requestsPerRefresh(hash: string, ready: string): Promise<string[][]> {
  // No timer: only the refreshes asked for here run.
  const d = await suite.open({ pollMs: 600_000, hash });
  await d.page.locator(ready).first().waitFor({ timeout: UI_TIMEOUT_MS });
  await expect.poll(() => refreshCount(d.page), { timeout: UI_TIMEOUT_MS }).toBeGreaterThanOrEqual(1);
  const perRefresh: string[][] = [];
  for (let i = 0; i < REFRESHES; i++) {
    d.apiRequests.length = 0;
    const before = await refreshCount(d.page);
    await d.page.getByRole('button', { name: 'Refresh now' }).click();
    await expect.poll(() => refreshCount(d.page), { timeout: UI_TIMEOUT_MS }).toBe(before + 1);
    perRefresh.push([...d.apiRequests].sort());
  }
  expect(d.problems).toEqual([]);
  await d.close();
  return perRefresh;
}

async function measureViews(taskId: string): Promise<Record<string, string[][]>> {
  return {
    overview: await requestsPerRefresh('', 'table.types'),
    tasks: await requestsPerRefresh('#/tasks', 'table.tasks'),
    task: await requestsPerRefresh(`#/tasks/${taskId}`, 'dl.details'),
    schedules: await requestsPerRefresh('#/schedules/counted', 'table.schedules'),
  };
}

describe('requests per refresh', () => {
  it('are the same with 3 tasks and with 300: GET /stats and the open view’s read', async () => {
    const [first] = await enqueueWaiting(3);
    const withThree = await measureViews(first!);
    await enqueueWaiting(297);
    const listed = await http(suite.stack.url, 'GET', '/tasks?limit=100');
    expect(listed.body.tasks).toHaveLength(100);
    expect(listed.body.nextCursor).toBeDefined();
    const withThreeHundred = await measureViews(first!);

    const expected = {
      overview: ['GET /stats'],
      tasks: ['GET /stats', 'GET /tasks'],
      task: ['GET /stats', `GET /tasks/${first}`],
      schedules: ['GET /schedules', 'GET /schedules/counted/fires', 'GET /stats'],
    };
    for (const [view, requests] of Object.entries(expected)) {
      expect(withThree[view], view).toEqual(Array(REFRESHES).fill(requests));
      expect(withThreeHundred[view], view).toEqual(Array(REFRESHES).fill(requests));
    }
    console.log(
      'requests per refresh (3 tasks / 300 tasks):',
      Object.keys(expected)
        .map((v) => `${v} ${withThree[v]![0]!.length} / ${withThreeHundred[v]![0]!.length}`)
        .join(', '),
    );
  });

  it('run on their own every poll interval while the page is visible, and stop while it is hidden', async () => {
    const d = await suite.open({ pollMs: 500, hash: '#/tasks' });
    await d.page.locator('table.tasks').waitFor({ timeout: UI_TIMEOUT_MS });
    await waitForRefreshes(d.page, 1);
    d.apiRequests.length = 0;
    const start = await refreshCount(d.page);
    await waitForRefreshes(d.page, 4);
    const refreshes = (await refreshCount(d.page)) - start;
    // Each refresh is two reads; one more refresh may have started before the count was read.
    expect(d.apiRequests.length).toBeGreaterThanOrEqual(2 * refreshes);
    expect(d.apiRequests.length).toBeLessThanOrEqual(2 * (refreshes + 1));

    await setVisibility(d.page, 'hidden');
    // Let a refresh that was in flight finish, then nothing may start: an absence is waited for in time.
    await d.page.waitForTimeout(600);
    const hiddenAt = await refreshCount(d.page);
    d.apiRequests.length = 0;
    await d.page.waitForTimeout(2_000);
    expect(await refreshCount(d.page)).toBe(hiddenAt);
    expect(d.apiRequests).toEqual([]);

    await setVisibility(d.page, 'visible');
    await waitForRefreshes(d.page, 2);
    expect(d.problems).toEqual([]);
  });

  it('a list is read a page at a time, filtered by status and type, whatever its length', async () => {
    const tasks = Array.from({ length: 30 }, (_, n) => ({
      type: 'demo.fail',
      payload: { failTimes: n % 3 },
      delaySeconds: 3600,
    }));
    expect((await http(suite.stack.url, 'POST', '/tasks/batch', { tasks })).body.created).toBe(30);
    const d = await suite.open({ pollMs: 600_000, hash: '#/tasks' });
    await d.page.getByLabel('Status').selectOption('QUEUED');
    await d.page.getByLabel('Type').selectOption('demo.fail');
    await expect.poll(() => new URL(d.page.url()).hash).toBe('#/tasks?status=QUEUED&type=demo.fail');
    const rows = d.page.locator('table.tasks tbody tr');
    await expect.poll(() => rows.count(), { timeout: UI_TIMEOUT_MS }).toBe(25);
    expect(await rows.filter({ hasNotText: /demo\.fail.*QUEUED/ }).count()).toBe(0);
    const firstPage = await rows.first().innerText();
    const pager = d.page.getByRole('navigation', { name: 'Task list pages' });

    await pager.getByRole('button', { name: 'Next page' }).click();
    await pager.getByText('Page 2', { exact: true }).waitFor({ timeout: UI_TIMEOUT_MS });
    await expect.poll(() => rows.count(), { timeout: UI_TIMEOUT_MS }).toBe(5);
    // (A filtered page may end with a cursor and no more matches behind it: the API says "follow it".)
    d.apiRequests.length = 0;
    const before = await refreshCount(d.page);
    await d.page.getByRole('button', { name: 'Refresh now' }).click();
    await expect.poll(() => refreshCount(d.page), { timeout: UI_TIMEOUT_MS }).toBe(before + 1);
    expect(d.apiRequests.sort()).toEqual(['GET /stats', 'GET /tasks']);

    await pager.getByRole('button', { name: 'Previous page' }).click();
    await pager.getByText('Page 1', { exact: true }).waitFor({ timeout: UI_TIMEOUT_MS });
    await expect.poll(() => rows.first().innerText(), { timeout: UI_TIMEOUT_MS }).toBe(firstPage);
    expect(d.problems).toEqual([]);
  });
});
