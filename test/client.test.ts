/**
 * The HTTP client (leasehold/client) against the local stack in this process (API, worker and
 * recovery on dynalite): typed enqueue to a finished task, lists across pages, typed errors, and the
 * faults a network brings, injected by a proxy between the two: throttled answers are sent again, and
 * an answer lost after the API acted does not make a second task.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  BadRequestError,
  createClient,
  flowTaskOf,
  NotFoundError,
  taskOf,
  WaitTimeoutError,
  type BatchOutcome,
  type BatchTask,
  type ClientTask,
  type LeaseholdClient,
} from 'leasehold/client';
import { startStack, type LocalStack } from '../tools/local/stack.js';
import { demoEcho, demoSleep, demoSum, demoTasks } from '../tasks/demo.js';
import { startTestDynamo, type TestDynamo } from './support/test-dynamo.js';
import { FAST_STACK_ENV } from './support/stack-process.js';
import { silentLogger } from './support/worker-world.js';
import { startFaultProxy, throttledProblem, type FaultProxy } from './support/http-fault-proxy.js';

let dynamo: TestDynamo;
let stack: LocalStack;
let dataDir: string;
const proxies: FaultProxy[] = [];

beforeAll(async () => {
  dynamo = await startTestDynamo();
  dataDir = await mkdtemp(join(tmpdir(), 'leasehold-client-'));
  stack = await startStack({
    env: {
      ...FAST_STACK_ENV,
      LEASEHOLD_DYNAMODB_ENDPOINT: dynamo.endpoint,
      LEASEHOLD_TABLE: 'client-tasks',
      LEASEHOLD_DATA_DIR: dataDir,
      // The worker hears this process's enqueues at once: polls and sweeps need not load the table (and
      // the two cores) meanwhile.
      LEASEHOLD_POLL_INTERVAL_MS: '500',
      LEASEHOLD_RECOVERY_INTERVAL_MS: '3000',
    },
    roles: { api: true, worker: true, recovery: true },
    definitions: demoTasks,
    logger: silentLogger(),
  });
});
afterAll(async () => {
  for (const p of proxies) await p.close();
  await stack?.stop();
  await dynamo?.close();
  await rm(dataDir, { recursive: true, force: true });
});

/** A client of its own caller (so each test sees only its own tasks), with short retry waits. */
function clientFor(url = stack.apiUrl!): LeaseholdClient {
  return createClient({ url, owner: `client-test-${randomUUID()}`, retry: { baseMs: 2, maxMs: 10 } });
}

async function proxy(): Promise<FaultProxy> {
  const p = await startFaultProxy(stack.apiUrl!, { hostAsUpstream: true });
  proxies.push(p);
  return p;
}

async function all<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}

/** Due in a minute: stays QUEUED for the test's length, so the worker leaves it alone. */
const later = { delay: 60_000 };

describe('enqueue and waitFor', () => {
  it('enqueues by definition with typed payload and result, and waitFor resolves with the finished task', async () => {
    const client = clientFor();
    const echo = await client.enqueue(demoEcho, { hello: 'client' });
    expect(echo.created).toBe(true);
    const sleeper = await client.enqueue(demoSleep, { ms: 5 }, { priority: 7 });
    expect(sleeper.task).toMatchObject({ type: 'demo.sleep', status: 'QUEUED', priority: 7 });

    const done = await client.waitFor(sleeper.task.id, { interval: 20, timeout: 10_000 });
    expect(done.status).toBe('SUCCESS');
    // Typed by the definition: result is { sleptMs: number } | undefined, payload { ms: number }.
    const slept: number | undefined = done.result?.sleptMs;
    expect(slept).toBeGreaterThanOrEqual(5);
    expect(done.payload?.ms).toBe(5);
    expect((await client.waitFor(echo.task.id, { interval: 20, timeout: 10_000 })).result).toEqual({
      hello: 'client',
    });
  });

  it('enqueues by name, with options in milliseconds and the caller own idempotency key', async () => {
    const client = clientFor();
    const runAt = new Date(Date.now() + 3_600_000);
    const first = await client.enqueue('demo.echo', [1, 2], {
      runAt,
      maxAttempts: 2,
      idempotencyKey: 'order-17',
    });
    expect(first).toMatchObject({ created: true, task: { type: 'demo.echo', maxAttempts: 2 } });
    expect(Date.parse(first.task.availableAt)).toBe(Math.floor(runAt.getTime()));
    const again = await client.enqueue('demo.echo', [1, 2], {
      runAt,
      maxAttempts: 2,
      idempotencyKey: 'order-17',
    });
    expect(again).toMatchObject({ created: false, task: { id: first.task.id } });

    const delayed = await client.enqueue('demo.echo', null, { delay: 1_500 });
    // 1.5 s is sent as 2 whole seconds: never due early.
    const due = Date.parse(delayed.task.availableAt) - Date.parse(delayed.task.createdAt);
    expect(due).toBe(2_000);
    expect((await client.get(delayed.task.id)).payload).toBeNull();
  });

  it('cancels and retries, and waitFor resolves with a CANCELLED task too', async () => {
    const client = clientFor();
    const { task } = await client.enqueue(demoEcho, 'x', later);
    expect((await client.cancel(task.id)).status).toBe('CANCELLED');
    expect((await client.waitFor(task.id, { interval: 20 })).status).toBe('CANCELLED');
    expect((await client.retry(task.id)).status).toBe('QUEUED');
  });

  it('waitFor rejects with WaitTimeoutError after its timeout, and with the reason when its signal aborts', async () => {
    const client = clientFor();
    const { task } = await client.enqueue(demoEcho, 'late', later);
    const timedOut = await client.waitFor(task.id, { interval: 20, timeout: 120 }).catch((e: unknown) => e);
    expect(timedOut).toBeInstanceOf(WaitTimeoutError);
    expect(timedOut).toMatchObject({ code: 'WAIT_TIMEOUT', taskId: task.id, task: { status: 'QUEUED' } });

    const stop = new AbortController();
    const waiting = client.waitFor(task.id, { interval: 20, signal: stop.signal });
    setTimeout(() => stop.abort(new Error('no longer needed')), 60);
    await expect(waiting).rejects.toThrow('no longer needed');
  });
});

describe('enqueueFlow', () => {
  it('enqueues a flow (POST /flows): its ids in the shape sent, the root waits, then runs on its children’s results', async () => {
    const client = clientFor();
    const flow = {
      task: flowTaskOf(demoSum, null),
      children: [
        flowTaskOf(demoEcho, { n: 1 }),
        flowTaskOf(demoEcho, { n: 2 }, { optional: true }),
        { task: flowTaskOf(demoSum, null), children: [flowTaskOf(demoEcho, { n: 4 })] },
      ],
    };
    const { id, ids, task, created } = await client.enqueueFlow(flow);
    expect(created).toBe(true);
    expect(task).toMatchObject({ id, type: 'demo.sum', status: 'WAITING_CHILDREN', children: { total: 3 } });
    expect(ids).toEqual({
      id,
      children: [
        { id: expect.any(String) },
        { id: expect.any(String) },
        { id: expect.any(String), children: [{ id: expect.any(String) }] },
      ],
    });
    expect(await client.get(ids.children![1]!.id)).toMatchObject({ parentId: id, optional: true });
    // The worker runs the children, then the nested parent, then the root, which sums its children's `n`.
    const done = await client.waitFor(id, { interval: 20, timeout: 20_000 });
    expect(done).toMatchObject({ status: 'SUCCESS', result: { sum: 3 }, children: { total: 3, pending: 0 } });
    expect((await client.get(ids.children![2]!.id)).result).toEqual({ sum: 4 });
  });

  it('a repeat under the flow’s key answers the first flow (created false); a refused task is a BadRequestError naming it', async () => {
    const client = clientFor();
    const flow = {
      task: { type: 'demo.sum' },
      children: [{ type: 'demo.echo', payload: { n: 1 } }],
      idempotencyKey: 'flow-1',
    };
    const first = await client.enqueueFlow(flow);
    const again = await client.enqueueFlow(flow);
    expect(again).toMatchObject({ created: false, id: first.id, ids: first.ids });

    const bad = await client
      .enqueueFlow({
        task: { type: 'demo.sum' },
        children: [{ type: 'demo.echo' }, { type: 'demo.sleep', payload: { ms: 'soon' } }],
      })
      .catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(BadRequestError);
    expect((bad as BadRequestError).errors).toEqual([
      expect.objectContaining({ field: 'children.1.payload.ms' }),
    ]);
  });
});

describe('lists and errors', () => {
  it('list iterates beyond one page, newest first, reading pages as it goes', async () => {
    const p = await proxy();
    const client = clientFor(p.url);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await client.enqueue(demoEcho, i, later)).task.id);
    const listed = await all(client.list({ pageSize: 2 }));
    expect(listed.map((t) => t.id)).toEqual([...ids].reverse());
    expect(
      p.seen.filter((r) => r.method === 'GET' && r.path.startsWith('/tasks?')).map((r) => r.path),
    ).toEqual([
      '/tasks?limit=2',
      expect.stringMatching(/^\/tasks\?limit=2&cursor=/),
      expect.stringMatching(/^\/tasks\?limit=2&cursor=/),
    ]);
    // A loop that stops early reads no further pages.
    const before = p.seen.length;
    for await (const first of client.list({ pageSize: 2, type: 'demo.echo' })) {
      expect(first.id).toBe(ids[4]);
      break;
    }
    expect(p.seen.length - before).toBe(1);
  });

  it('a 404 is NotFoundError with the problem code; a 400 is BadRequestError with a field per problem', async () => {
    const client = clientFor();
    const missing = await client.get('no-such-task').catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(NotFoundError);
    expect(missing).toMatchObject({ status: 404, code: 'TASK_NOT_FOUND' });

    const bad = await client.enqueue('demo.sleep', { ms: 'soon' }).catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(BadRequestError);
    expect(bad).toMatchObject({ status: 400, code: 'VALIDATION_FAILED' });
    expect((bad as BadRequestError).errors).toEqual([
      expect.objectContaining({ field: expect.stringContaining('ms') }),
    ]);
  });
});

describe('faults between the client and the API', () => {
  it('a throttled answer (503 THROTTLED, API Gateway 429) is sent again until it goes through', async () => {
    const p = await proxy();
    const client = clientFor(p.url);
    p.inject({ method: 'POST', fault: { kind: 'answer', status: 503, body: throttledProblem } });
    p.inject({
      method: 'POST',
      fault: { kind: 'answer', status: 429, body: { message: 'Too Many Requests' } },
    });
    p.inject({ method: 'POST', fault: { kind: 'answer', status: 503, body: throttledProblem } });
    const { task, created } = await client.enqueue(demoEcho, 'throttled', later);
    expect(created).toBe(true);
    expect(p.seen.filter((r) => r.method === 'POST').map((r) => [r.action, r.status])).toEqual([
      ['answered', 503],
      ['answered', 429],
      ['answered', 503],
      ['forwarded', 201],
    ]);
    expect((await all(client.list())).map((t) => t.id)).toEqual([task.id]);

    p.inject({ method: 'GET', fault: { kind: 'answer', status: 503, body: throttledProblem } });
    expect((await client.get(task.id)).id).toBe(task.id);
  });

  it('a lost answer on POST does not make a duplicate: the resend carries the same idempotency key', async () => {
    const p = await proxy();
    const client = clientFor(p.url);
    p.inject({ method: 'POST', path: /^\/tasks$/, fault: { kind: 'lose-answer' } });
    const { task, created } = await client.enqueue(demoEcho, 'once', later);
    const posts = p.seen.filter((r) => r.method === 'POST');
    expect(posts.map((r) => [r.action, r.status])).toEqual([
      ['lost-answer', 201],
      ['forwarded', 200],
    ]);
    const keys = posts.map((r) => JSON.parse(r.body).idempotencyKey as string);
    expect(keys[0]).toMatch(/^[0-9a-f-]{36}$/);
    expect(keys[1]).toBe(keys[0]);
    // The key was the client's own: the task the resend met is the one this call created.
    expect(created).toBe(true);
    expect((await all(client.list())).map((t) => t.id)).toEqual([task.id]);
  });

  it('a cancel whose answer was lost is answered with the task it cancelled, not the resend 409', async () => {
    const p = await proxy();
    const client = clientFor(p.url);
    const { task } = await client.enqueue(demoEcho, 'cancel me', later);
    p.inject({ method: 'POST', path: /\/cancel$/, fault: { kind: 'lose-answer' } });
    expect(await client.cancel(task.id)).toMatchObject({ id: task.id, status: 'CANCELLED' });
    expect(p.seen.filter((r) => r.path.endsWith('/cancel')).map((r) => [r.action, r.status])).toEqual([
      ['lost-answer', 200],
      ['forwarded', 409],
    ]);
  });
});

describe('enqueueMany', () => {
  it('sends 250 tasks in 3 batches; a bad one is a failed outcome with its index, the rest are created', async () => {
    const client = clientFor();
    const bad = 117;
    async function* tasks(): AsyncGenerator<BatchTask> {
      for (let i = 0; i < 250; i++)
        yield i === bad
          ? { type: 'demo.sleep', payload: { ms: 'soon' }, options: later }
          : taskOf(demoSleep, { ms: i }, later);
    }
    const batches: { size: number; created: number }[] = [];
    const result = await client.enqueueMany(tasks(), {
      onBatch: (outcomes, totals) => batches.push({ size: outcomes.length, created: totals.created }),
    });
    expect(result).toMatchObject({ created: 249, existing: 0, failed: 1 });
    expect(batches.map((b) => b.size).sort()).toEqual([100, 100, 50]);
    expect(batches.at(-1)!.created).toBe(249);
    expect(result.outcomes.map((o) => o.index)).toEqual([...Array(250).keys()]);
    const failed = result.outcomes[bad] as Extract<BatchOutcome, { outcome: 'failed' }>;
    expect(failed.outcome).toBe('failed');
    expect(failed.error).toBeInstanceOf(BadRequestError);
    expect((failed.error as BadRequestError).errors[0]?.field).toContain('ms');
    const created = result.outcomes[bad + 1] as { task: ClientTask };
    expect(created.task.payload).toEqual({ ms: bad + 1 });
    expect(await all(client.list({ pageSize: 100 }))).toHaveLength(249);
  });

  it('sends the tasks throttled on their own again, with their keys, and counts totals only without keepOutcomes', async () => {
    const p = await proxy();
    const client = clientFor(p.url);
    // The first batch is answered by the proxy: both tasks throttled (503 in their results).
    p.inject({
      method: 'POST',
      path: /^\/tasks\/batch$/,
      fault: {
        kind: 'answer',
        status: 200,
        body: {
          results: [0, 1].map((index) => ({
            index,
            outcome: 'failed',
            status: 503,
            problem: throttledProblem,
          })),
          created: 0,
          existing: 0,
          failed: 2,
        },
      },
    });
    const result = await client.enqueueMany([taskOf(demoEcho, 'a', later), taskOf(demoEcho, 'b', later)], {
      keepOutcomes: false,
    });
    expect(result).toEqual({ created: 2, existing: 0, failed: 0, outcomes: [] });
    const bodies = p.seen.filter((r) => r.path === '/tasks/batch').map((r) => JSON.parse(r.body));
    expect(bodies).toHaveLength(2);
    expect(bodies[1].tasks.map((t: any) => t.idempotencyKey)).toEqual(
      bodies[0].tasks.map((t: any) => t.idempotencyKey),
    );
  });
});

describe('schedules', () => {
  it('put, get, list, fires and delete', async () => {
    const client = clientFor();
    const input = { expression: 'rate(1 hour)', task: { type: 'demo.echo', payload: { tick: true } } };
    const put = await client.schedules.put('hourly', input);
    expect(put).toMatchObject({
      created: true,
      schedule: { name: 'hourly', expression: 'rate(1 hour)', enabled: true },
    });
    expect((await client.schedules.put('hourly', { ...input, enabled: false })).created).toBe(false);
    expect(await client.schedules.get('hourly')).toMatchObject({ name: 'hourly', enabled: false });
    await client.schedules.put('daily', { ...input, expression: 'cron(0 9 * * ? *)' });
    expect((await all(client.schedules.list({ pageSize: 1 }))).map((s) => s.name).sort()).toEqual([
      'daily',
      'hourly',
    ]);
    expect(await client.schedules.fires('hourly', { limit: 5 })).toEqual({ fires: [], missed: [] });
    await client.schedules.delete('hourly');
    await expect(client.schedules.get('hourly')).rejects.toBeInstanceOf(NotFoundError);
  });
});
