/**
 * The dashboard in a real browser (Debian's Chromium, driven by playwright-core) against a local stack:
 * tasks enqueued through the API appear and finish on the page; cancel, retry and enqueue from the page
 * change the tasks; a flow's parent lists its children with their statuses, a child links its parent,
 * and a task's stored steps show; a schedule's fires show, and it is disabled, enabled and deleted from the page; a
 * refused action shows the API's problem; the keyboard reaches everything; the same page works behind
 * `leasehold dashboard`'s signing proxy. No console errors, no failed requests, nothing fetched from off
 * the machine, no serious axe-core violations. Writes docs/screenshots/overview.png and task.png.
 */
import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { sigv4Signer } from '../../shared/client/sigv4.js';
import { startDashboardProxy } from '../../tools/dashboard/dashboard-proxy.js';
import { http } from '../support/stack-process.js';
import {
  confirmDialog,
  focused,
  dashboardSuite,
  SCREENSHOTS,
  seriousAxeViolations,
  UI_TIMEOUT_MS,
  type DashboardPage,
} from './support/dashboard-browser.js';

const suite = dashboardSuite('dashboard-browser');
const open = suite.open;

async function enqueue(body: Record<string, unknown>): Promise<string> {
  const { status, body: answer } = await http(suite.stack.url, 'POST', '/tasks', body);
  expect(status).toBe(201);
  return answer.task.id;
}

async function statusOf(id: string): Promise<string> {
  return (await http(suite.stack.url, 'GET', `/tasks/${id}`)).body.task.status;
}

/** The task page's status badge, once it reads `status`. */
async function waitForTaskStatus(d: DashboardPage, status: string): Promise<void> {
  await d.page
    .locator('dl.details .badge', { hasText: new RegExp(`^${status}$`) })
    .waitFor({ timeout: UI_TIMEOUT_MS });
}

describe('the dashboard in Chromium', () => {
  it('a task enqueued through the API appears running, with its progress, and finishes on the page', async () => {
    const d = await open();
    const id = await enqueue({ type: 'demo.sleep', payload: { ms: 9000 } });
    const running = d.page.locator('section', { has: d.page.getByRole('heading', { name: 'Running now' }) });
    await running.getByRole('link', { name: id }).waitFor({ timeout: UI_TIMEOUT_MS });
    await running.getByRole('progressbar', { name: `Progress of ${id}` }).waitFor({ timeout: UI_TIMEOUT_MS });
    await expect.poll(() => running.getByRole('row', { name: new RegExp(id) }).innerText()).toMatch(/1 of 3/);

    await running.getByRole('link', { name: id }).click();
    await d.page.getByRole('heading', { level: 1, name: `Task ${id}` }).waitFor({ timeout: UI_TIMEOUT_MS });
    await waitForTaskStatus(d, 'SUCCESS');
    await expect
      .poll(() => d.page.getByRole('region', { name: 'Result' }).innerText())
      .toMatch(/"sleptMs": \d+/);
    expect(await d.page.getByRole('region', { name: 'Payload' }).innerText()).toMatch(/"ms": 9000/);

    await d.page.getByRole('link', { name: 'Tasks', exact: true }).click();
    const row = d.page.getByRole('row', { name: new RegExp(id) });
    await row.waitFor({ timeout: UI_TIMEOUT_MS });
    expect(await row.innerText()).toMatch(/SUCCESS/);
    expect(d.problems).toEqual([]);
  });

  it('cancel from the task page stops a running task', async () => {
    const id = await enqueue({ type: 'demo.sleep', payload: { ms: 120_000 } });
    const d = await open({ hash: `#/tasks/${id}` });
    await waitForTaskStatus(d, 'RUNNING');
    await d.page.getByRole('button', { name: 'Cancel task' }).click();
    await confirmDialog(d.page, 'Cancel task');
    await d.page
      .getByRole('status')
      .filter({ hasText: /Cancel requested|Cancelled/ })
      .waitFor({ timeout: UI_TIMEOUT_MS });
    await waitForTaskStatus(d, 'CANCELLED');
    expect(await statusOf(id)).toBe('CANCELLED');
    expect(d.problems).toEqual([]);
  });

  it('retry from the task page puts a cancelled task back, and it runs', async () => {
    const id = await enqueue({ type: 'demo.sleep', payload: { ms: 50 }, delaySeconds: 3600 });
    expect((await http(suite.stack.url, 'POST', `/tasks/${id}/cancel`)).body.task.status).toBe('CANCELLED');
    const d = await open({ hash: `#/tasks/${id}` });
    await waitForTaskStatus(d, 'CANCELLED');
    await d.page.getByRole('button', { name: 'Retry task' }).click();
    await confirmDialog(d.page, 'Retry task');
    await d.page.getByRole('status').filter({ hasText: 'Queued again' }).waitFor({ timeout: UI_TIMEOUT_MS });
    await waitForTaskStatus(d, 'SUCCESS');
    expect(await statusOf(id)).toBe('SUCCESS');
    expect(d.problems).toEqual([]);
  });

  it('a flow’s parent lists its children with their statuses; a child links its parent; a task shows its steps', async () => {
    const flow = await http(suite.stack.url, 'POST', '/flows', {
      task: { type: 'demo.sum' },
      children: [
        { type: 'demo.echo', payload: { n: 2 } },
        { type: 'demo.fail', payload: { failTimes: 5 }, maxAttempts: 1, optional: true },
      ],
    });
    expect(flow.status).toBe(201);
    const rootId: string = flow.body.id;
    const [echoId, failId] = (flow.body.ids.children as { id: string }[]).map((c) => c.id);

    const d = await open({ hash: `#/tasks/${rootId}` });
    const children = d.page.getByRole('region', { name: /^Children/ });
    await children.getByRole('link', { name: echoId! }).waitFor({ timeout: UI_TIMEOUT_MS });
    // The children end (one optional, failed), then the parent runs: each status as it is now.
    await waitForTaskStatus(d, 'SUCCESS');
    const rowOf = (id: string) => children.getByRole('row', { name: new RegExp(id) });
    await expect
      .poll(() => rowOf(echoId!).innerText(), { timeout: UI_TIMEOUT_MS })
      .toMatch(/demo\.echo\s+SUCCESS\s+\{"n":2\}/);
    await expect
      .poll(() => rowOf(failId!).innerText(), { timeout: UI_TIMEOUT_MS })
      .toMatch(/demo\.fail\s+FAILED optional\s+\S/);
    expect(await d.page.getByRole('heading', { name: /^Children/ }).innerText()).toBe(
      'Children (0 of 2 pending)',
    );
    expect(await d.page.getByRole('region', { name: 'Result' }).innerText()).toMatch(/"sum": 2/);
    expect(await seriousAxeViolations(d.page)).toEqual([]);

    // A child's page links its parent, and back.
    await children.getByRole('link', { name: failId! }).click();
    await d.page
      .getByRole('heading', { level: 1, name: `Task ${failId}` })
      .waitFor({ timeout: UI_TIMEOUT_MS });
    const details = d.page.locator('dl.details');
    await details.getByRole('link', { name: rootId }).waitFor({ timeout: UI_TIMEOUT_MS });
    expect(await details.innerText()).toMatch(/Parent\s+\S+\s+optional/);
    await details.getByRole('link', { name: rootId }).click();
    await d.page
      .getByRole('heading', { level: 1, name: `Task ${rootId}` })
      .waitFor({ timeout: UI_TIMEOUT_MS });
    await children.getByRole('link', { name: echoId! }).waitFor({ timeout: UI_TIMEOUT_MS });

    // demo.steps fails once after step b; its second attempt replays a and b and runs c.
    const stepsId = await enqueue({ type: 'demo.steps', payload: { failOnceAfter: 'b' } });
    await d.page.goto(`${suite.stack.url}/?poll=500#/tasks/${stepsId}`);
    await waitForTaskStatus(d, 'SUCCESS');
    const steps = d.page.getByRole('region', { name: 'Steps' });
    await steps.getByRole('table').waitFor({ timeout: UI_TIMEOUT_MS });
    const rows = steps.locator('tbody tr');
    await expect.poll(() => rows.count(), { timeout: UI_TIMEOUT_MS }).toBe(3);
    expect(await steps.locator('tbody th').allInnerTexts()).toEqual(['a', 'b', 'c']);
    expect(await rows.nth(0).innerText()).toMatch(/\{"step":"a","attempt":1\}/);
    expect(await rows.nth(2).innerText()).toMatch(/\{"step":"c","attempt":2\}/);
    expect(await d.page.getByRole('region', { name: 'Result' }).innerText()).toMatch(
      /"replayed": \[\s*"a",\s*"b"\s*\]/,
    );
    expect(await seriousAxeViolations(d.page)).toEqual([]);
    expect(d.problems).toEqual([]);
  });

  it('pauses a type from the types page: its task waits, and runs once resumed there', async () => {
    const d = await open({ hash: '#/types' });
    const row = d.page.getByRole('row', { name: /demo\.report/ });
    await row.waitFor({ timeout: UI_TIMEOUT_MS });
    await d.page.getByRole('button', { name: 'Pause demo.report' }).click();
    await confirmDialog(d.page, 'Pause type');
    await d.page
      .getByRole('status')
      .filter({ hasText: 'Paused demo.report' })
      .waitFor({ timeout: UI_TIMEOUT_MS });
    await row.locator('.badge', { hasText: /^paused$/ }).waitFor({ timeout: UI_TIMEOUT_MS });

    // The stack's worker reads the pauses before each round, at most 500 ms apart (LEASEHOLD_POLL_INTERVAL_MS);
    // a round begun before finishes: the task is enqueued well after both.
    await new Promise((r) => setTimeout(r, 3_000));
    const id = await enqueue({ type: 'demo.report', payload: { ms: 50 } });
    await new Promise((r) => setTimeout(r, 3 * 500));
    expect(await statusOf(id)).toBe('QUEUED');

    await d.page.getByRole('button', { name: 'Resume demo.report' }).click();
    await confirmDialog(d.page, 'Resume type');
    await d.page
      .getByRole('status')
      .filter({ hasText: 'Resumed demo.report' })
      .waitFor({ timeout: UI_TIMEOUT_MS });
    await row.locator('.badge', { hasText: /^active$/ }).waitFor({ timeout: UI_TIMEOUT_MS });
    await expect.poll(() => statusOf(id), { timeout: UI_TIMEOUT_MS }).toBe('SUCCESS');
    expect(d.problems).toEqual([]);
  });

  it('enqueues from the form built from the type’s schema, then shows the new task', async () => {
    const d = await open({ hash: '#/enqueue' });
    await d.page.getByLabel('Task type').selectOption('demo.sleep');
    await d.page.getByLabel(/^ms \(required\)/).fill('300');
    await d.page.getByLabel('Priority').fill('5');
    await d.page.getByRole('button', { name: 'Enqueue' }).click();
    await confirmDialog(d.page, 'Enqueue');
    await d.page.getByRole('heading', { level: 1, name: /^Task / }).waitFor({ timeout: UI_TIMEOUT_MS });
    const id = decodeURIComponent(new URL(d.page.url()).hash.replace('#/tasks/', ''));
    await waitForTaskStatus(d, 'SUCCESS');
    const { task } = (await http(suite.stack.url, 'GET', `/tasks/${id}`)).body;
    expect(task).toMatchObject({ type: 'demo.sleep', payload: { ms: 300 }, priority: 5, status: 'SUCCESS' });
    expect(d.problems).toEqual([]);
  });

  it('a refused action shows the API’s problem: its detail and each bad field', async () => {
    const d = await open({ hash: '#/enqueue' });
    d.expectConsoleError(/status of 400/);
    await d.page.getByLabel('Task type').selectOption('demo.sleep');
    await d.page.getByLabel('Write the payload as JSON').check();
    await d.page.getByLabel('Payload (JSON)').fill('{"ms": "soon"}');
    await d.page.getByRole('button', { name: 'Enqueue' }).click();
    await confirmDialog(d.page, 'Enqueue');
    const alert = d.page.getByRole('alert');
    await alert.waitFor({ timeout: UI_TIMEOUT_MS });
    expect(await alert.innerText()).toMatch(/Enqueue failed \(400 VALIDATION_FAILED\).*Fix these fields/s);
    expect(await alert.innerText()).toMatch(/payload\.ms: .*expected number/);

    // A page that has not caught up yet: the task finished meanwhile, and the API refuses the cancel.
    const id = await enqueue({ type: 'demo.echo', payload: 1, delaySeconds: 3600 });
    const stale = await open({ hash: `#/tasks/${id}`, pollMs: 600_000 });
    stale.expectConsoleError(/status of 409/);
    await waitForTaskStatus(stale, 'QUEUED');
    await http(suite.stack.url, 'POST', `/tasks/${id}/cancel`);
    await stale.page.getByRole('button', { name: 'Cancel task' }).click();
    await confirmDialog(stale.page, 'Cancel task');
    const conflict = stale.page.getByRole('alert');
    await conflict.waitFor({ timeout: UI_TIMEOUT_MS });
    expect(await conflict.innerText()).toMatch(/Cancel task failed \(409 [A-Z_]+\):/);
    expect(d.problems).toEqual([]);
    expect(stale.problems).toEqual([]);
  });

  it('shows a schedule’s fires; disables, enables and deletes a schedule from the page', async () => {
    const at = new Date(Date.now() + 3_000).toISOString().slice(0, 19);
    const once = await http(suite.stack.url, 'PUT', '/schedules/dash-once', {
      expression: `at(${at})`,
      task: { type: 'demo.echo', payload: { from: 'schedule' } },
    });
    expect(once.status).toBe(201);
    const daily = await http(suite.stack.url, 'PUT', '/schedules/dash-daily', {
      expression: 'rate(1 day)',
      timezone: 'Europe/Berlin',
      task: { type: 'demo.echo' },
    });
    expect(daily.status).toBe(201);

    const d = await open({ hash: '#/schedules/dash-once' });
    const fires = d.page.getByRole('region', { name: 'Fires of dash-once' });
    await fires
      .getByRole('table', { name: /Recent fires/ })
      .getByRole('link')
      .first()
      .waitFor({ timeout: UI_TIMEOUT_MS });
    expect(await fires.getByRole('heading', { name: 'Missed ticks' }).isVisible()).toBe(true);

    const row = d.page.getByRole('row', { name: /dash-daily/ });
    expect(await row.innerText()).toMatch(/rate\(1 day\)\s+Europe\/Berlin\s+demo\.echo\s+enabled/);
    await row.getByRole('button', { name: 'Disable dash-daily' }).click();
    await confirmDialog(d.page, 'Disable');
    await row.getByText('disabled', { exact: true }).waitFor({ timeout: UI_TIMEOUT_MS });
    expect((await http(suite.stack.url, 'GET', '/schedules/dash-daily')).body.schedule.enabled).toBe(false);
    await row.getByRole('button', { name: 'Enable dash-daily' }).click();
    await confirmDialog(d.page, 'Enable');
    await row.getByText('enabled', { exact: true }).waitFor({ timeout: UI_TIMEOUT_MS });
    await row.getByRole('button', { name: 'Delete dash-daily' }).click();
    await confirmDialog(d.page, 'Delete');
    await row.waitFor({ state: 'detached', timeout: UI_TIMEOUT_MS });
    expect((await http(suite.stack.url, 'GET', '/schedules/dash-daily')).status).toBe(404);
    expect(d.problems).toEqual([]);
  });

  it('works from the keyboard: views by their links, actions confirmed or declined in a focused dialog', async () => {
    const id = await enqueue({ type: 'demo.echo', payload: 2, delaySeconds: 3600 });
    const d = await open();
    await d.page.keyboard.press('Tab');
    expect(await focused(d.page)).toBe('A Skip to content');
    await d.page.getByRole('link', { name: 'Tasks', exact: true }).focus();
    await d.page.keyboard.press('Enter');
    await expect.poll(() => focused(d.page)).toBe('H1 Tasks');
    await d.page.getByRole('link', { name: id }).focus();
    await d.page.keyboard.press('Enter');
    await waitForTaskStatus(d, 'QUEUED');
    await d.page.getByRole('button', { name: 'Cancel task' }).focus();
    await d.page.keyboard.press('Enter');
    const dialog = d.page.getByRole('dialog', { name: 'Cancel this task?' });
    await dialog.waitFor({ timeout: UI_TIMEOUT_MS });
    // A destructive action's dialog starts on the button that keeps things as they are.
    expect(await focused(d.page)).toBe('BUTTON Keep as is');
    await d.page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden', timeout: UI_TIMEOUT_MS });
    expect(await focused(d.page)).toBe('BUTTON Cancel task');
    expect(await statusOf(id)).toBe('QUEUED');
    await d.page.keyboard.press('Enter');
    await dialog.waitFor({ timeout: UI_TIMEOUT_MS });
    await d.page.keyboard.press('Shift+Tab'); // from "Keep as is" back to the action
    expect(await focused(d.page)).toBe('BUTTON Cancel task');
    await d.page.keyboard.press('Enter');
    await waitForTaskStatus(d, 'CANCELLED');
    expect(d.problems).toEqual([]);
  });

  it('works the same behind `leasehold dashboard`: signed in by its link, calls are signed', async () => {
    const proxy = await startDashboardProxy({
      target: new URL(suite.stack.url),
      signer: sigv4Signer('eu-west-1', { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' }),
      port: 0,
      apiLabel: suite.stack.url,
    });
    try {
      const d = await open({ hash: '#/enqueue', signInUrl: proxy.signInUrl }, proxy.url);
      await d.page.locator('dd.owner', { hasText: 'local' }).waitFor({ timeout: UI_TIMEOUT_MS });
      await d.page.getByLabel('Task type').selectOption('demo.echo');
      await d.page.getByLabel('Payload (JSON)').fill('{"via": "proxy"}');
      await d.page.getByRole('button', { name: 'Enqueue' }).click();
      await confirmDialog(d.page, 'Enqueue');
      await waitForTaskStatus(d, 'SUCCESS');
      expect(await d.page.getByRole('region', { name: 'Result' }).innerText()).toMatch(/"via": "proxy"/);
      expect(d.problems).toEqual([]);
    } finally {
      await proxy.close();
    }
  });

  it('overview and task page: screenshots, and no serious accessibility violations on any view', async () => {
    // Something in each part of the overview: finished, failed, retried and running tasks.
    await enqueue({ type: 'demo.fail', payload: { failTimes: 1 } });
    await enqueue({ type: 'demo.fail', payload: { failTimes: 5 }, maxAttempts: 1 });
    const doneId = await enqueue({
      type: 'demo.echo',
      payload: { invoice: 'inv-17', email: 'a@example.com' },
    });
    await enqueue({ type: 'demo.report', payload: { ms: 60_000 } });
    await enqueue({ type: 'demo.sleep', payload: { ms: 60_000 } });
    await enqueue({ type: 'demo.echo', payload: 3, delaySeconds: 600 });
    const nightly = await http(suite.stack.url, 'PUT', '/schedules/nightly-report', {
      expression: 'cron(0 2 * * ? *)',
      timezone: 'Europe/Berlin',
      task: { type: 'demo.report', payload: { ms: 1000 } },
    });
    expect(nightly.status).toBeLessThan(300);

    const d = await open();
    const running = d.page.locator('section', { has: d.page.getByRole('heading', { name: 'Running now' }) });
    await expect
      .poll(() => running.getByRole('progressbar').count(), { timeout: UI_TIMEOUT_MS })
      .toBeGreaterThanOrEqual(2);
    await d.page
      .locator('table.types caption', { hasText: 'once a minute' })
      .waitFor({ timeout: UI_TIMEOUT_MS });
    await d.page.screenshot({ path: join(SCREENSHOTS, 'overview.png'), fullPage: true });
    expect(await seriousAxeViolations(d.page)).toEqual([]);

    await d.page.goto(`${suite.stack.url}/?poll=500#/tasks/${doneId}`);
    await waitForTaskStatus(d, 'SUCCESS');
    await d.page.getByRole('region', { name: 'Cost' }).getByRole('table').waitFor({ timeout: UI_TIMEOUT_MS });
    await d.page.screenshot({ path: join(SCREENSHOTS, 'task.png'), fullPage: true });
    expect(await seriousAxeViolations(d.page)).toEqual([]);

    for (const [hash, heading] of [
      ['#/tasks', 'Tasks'],
      ['#/types', 'Task types'],
      ['#/enqueue', 'Enqueue a task'],
      ['#/schedules/nightly-report', 'Schedules'],
    ]) {
      await d.page.goto(`${suite.stack.url}/?poll=500${hash}`);
      await d.page.getByRole('heading', { level: 1, name: heading }).waitFor({ timeout: UI_TIMEOUT_MS });
      await d.page.locator('main table, main form').first().waitFor({ timeout: UI_TIMEOUT_MS });
      expect(await seriousAxeViolations(d.page), hash).toEqual([]);
    }
    expect(d.problems).toEqual([]);
  });
});
