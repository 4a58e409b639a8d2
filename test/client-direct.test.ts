/**
 * The direct client (`createDirectClient`) on dynalite: a task it enqueues is run by a worker on the
 * same table, refused for the API's reasons with the API's problem, and seen by the API as the same
 * caller's (an assumed-role session reduced to its role).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ThrottlingException } from '@aws-sdk/client-dynamodb';
import { ownerOfArn } from '../shared/api/caller.js';
import {
  BadRequestError,
  ClientOptionsError,
  ConflictError,
  NotFoundError,
  ServiceUnavailableError,
  WaitTimeoutError,
  createDirectClient,
  flowTaskOf,
  taskOf,
  type ClientTask,
  type DirectClient,
} from 'leasehold/client/direct';
import { clientErrorOf } from '../shared/client/direct-errors.js';
import { ValidationError } from '../shared/errors.js';
import { taskDefinitions } from '../tasks/catalog.js';
import { demoEcho, demoSleep, demoSum } from '../tasks/demo.js';
import { apiEvent, BOB } from './support/api-events.js';
import { ManualClock } from './support/manual-clock.js';
import { startTestDynamo, type TestDynamo } from './support/test-dynamo.js';
import { createWorkerWorld, FAST_LEASES, type WorkerWorld } from './support/worker-world.js';

/** Two sessions of one role: the API and the direct client both make the role the owner. */
const SESSION_1 = 'arn:aws:sts::123456789012:assumed-role/producer/session-1';
const SESSION_2 = 'arn:aws:sts::123456789012:assumed-role/producer/session-2';
const ROLE = 'arn:aws:iam::123456789012:role/producer';

let dynamo: TestDynamo;
let world: WorkerWorld;
let handler: (typeof import('../functions/api.js'))['handler'];
/** As the caller whose STS identity is SESSION_1 (no owner given). */
let client: DirectClient;
let identityLookups = 0;

/** A client on the world's table with the world's settings, as another principal. */
const clientFor = (owner: string, extra: Partial<Parameters<typeof createDirectClient>[0]> = {}) =>
  createDirectClient({
    tableName: world.config.tableName,
    endpoint: dynamo.endpoint,
    definitions: taskDefinitions,
    config: FAST_LEASES,
    owner,
    ...extra,
  });

const apiCall = async (method: string, path: string, caller: string, body?: unknown) => {
  const res = await handler(apiEvent({ method, path, caller, ...(body === undefined ? {} : { body }) }));
  return { status: res.statusCode, body: JSON.parse(res.body) as Record<string, any> };
};

/** What the call rejected with (fails the test if it resolved). */
async function refusal(call: Promise<unknown>): Promise<any> {
  const outcome = await call.then(
    (value) => ({ resolved: value }),
    (error: unknown) => ({ error }),
  );
  expect(outcome).toHaveProperty('error');
  return (outcome as { error: unknown }).error;
}

beforeAll(async () => {
  dynamo = await startTestDynamo();
  world = await createWorkerWorld(dynamo.endpoint, taskDefinitions, { workerTypes: 'demo.sleep' });
  Object.assign(process.env, {
    LEASEHOLD_DYNAMODB_ENDPOINT: dynamo.endpoint,
    LEASEHOLD_TABLE: world.config.tableName,
    POWERTOOLS_LOG_LEVEL: 'SILENT',
  });
  ({ handler } = await import('../functions/api.js'));
  client = createDirectClient({
    tableName: world.config.tableName,
    endpoint: dynamo.endpoint,
    definitions: taskDefinitions,
    config: FAST_LEASES,
    callerArn: async () => {
      identityLookups++;
      return SESSION_1;
    },
  });
});
afterAll(async () => {
  client?.close();
  await dynamo?.close();
});

describe('a task enqueued directly', () => {
  it('is run by a worker on the same table; waitFor answers SUCCESS with the typed result', async () => {
    const { task, created } = await client.enqueue(demoSleep, { ms: 5 });
    expect(created).toBe(true);
    expect(task).toMatchObject({ type: 'demo.sleep', status: 'QUEUED', payload: { ms: 5 }, attempts: 0 });
    const stop = new AbortController();
    const run = world.worker('w1').run({ stop: stop.signal, idleStopMs: Number.POSITIVE_INFINITY });
    try {
      const done = await client.waitFor(task.id, { timeout: 3_000, interval: 20 });
      expect(done).toMatchObject({ status: 'SUCCESS', attempts: 1 });
      const slept: number | undefined = done.result?.sleptMs;
      expect(slept).toBeGreaterThanOrEqual(5);
    } finally {
      stop.abort();
      await run;
    }
    // Nothing kicked: the client was given no worker function.
    expect(client.kicks).toBeUndefined();
  });

  it("is the caller's through the API: another session of the same role sees it, another principal does not", async () => {
    const { task } = await client.enqueue(demoEcho, { seen: 'by the API' }, { delay: 60_000 });
    expect(await client.owner()).toBe(ROLE);
    expect(ownerOfArn(SESSION_1)).toBe(ROLE);
    const viaApi = await apiCall('GET', `/tasks/${task.id}`, SESSION_2);
    expect(viaApi.status).toBe(200);
    // The same JSON the direct client answers: the HTTP client's ClientTask and the direct one agree.
    expect(viaApi.body.task).toEqual(await client.get(task.id));
    expect((await apiCall('GET', `/tasks/${task.id}`, BOB)).status).toBe(404);
    // And the other way: a task enqueued through the API by a session of the role is the client's.
    const posted = await apiCall('POST', '/tasks', SESSION_2, {
      type: 'demo.echo',
      payload: 1,
      delaySeconds: 60,
    });
    expect(posted.status).toBe(201);
    expect((await client.get(posted.body.task.id)).id).toBe(posted.body.task.id);
    // The identity was looked up once, at the first call that needed it.
    expect(identityLookups).toBe(1);
  });

  it('keeps its times in milliseconds (over HTTP they are whole seconds)', async () => {
    const { task } = await client.enqueue(demoEcho, 'later', { delay: 1_500, timeout: 2_500 });
    expect(Date.parse(task.availableAt) - Date.parse(task.createdAt)).toBe(1_500);
  });
});

describe('refused as the API refuses it, with nothing written', () => {
  it('a payload its schema refuses: BadRequestError with the problem POST /tasks answers', async () => {
    const before = (await world.scanAll()).length;
    const error = await refusal(client.enqueue(demoSleep, { ms: 'x' } as never));
    expect(error).toBeInstanceOf(BadRequestError);
    expect(error).toMatchObject({ status: 400, code: 'VALIDATION_FAILED' });
    expect(error.errors).toEqual([{ field: 'payload.ms', message: expect.any(String) }]);
    expect(error.cause).toBeInstanceOf(ValidationError);
    const viaApi = await apiCall('POST', '/tasks', SESSION_2, { type: 'demo.sleep', payload: { ms: 'x' } });
    expect(viaApi.status).toBe(400);
    expect(error.problem).toEqual(viaApi.body);
    expect((await world.scanAll()).length).toBe(before);
  });

  it('an unknown type, a timeout over the maximum execution time, runAt with delay', async () => {
    const before = (await world.scanAll()).length;
    const unknown = await refusal(client.enqueue('no.such.type', {}));
    expect(unknown).toBeInstanceOf(BadRequestError);
    expect(unknown.errors.map((e: { field: string }) => e.field)).toEqual(['type']);
    // FAST_LEASES: 10 s at most.
    const tooLong = await refusal(client.enqueue(demoEcho, 1, { timeout: 20_000 }));
    expect(tooLong.errors.map((e: { field: string }) => e.field)).toEqual(['timeoutSeconds']);
    const both = await refusal(client.enqueue(demoEcho, 1, { delay: 1_000, runAt: new Date() }));
    expect(both.errors.map((e: { field: string }) => e.field)).toEqual(['runAt']);
    expect((await world.scanAll()).length).toBe(before);
  });
});

describe('enqueueFlow', () => {
  const FLOWS = 'arn:aws:iam::123456789012:user/flows';

  it('writes the flow as POST /flows does: the ids tree, the root waiting, each child with its parent, seen by the API', async () => {
    const flows = clientFor(FLOWS);
    try {
      const flow = {
        task: flowTaskOf(demoSum, null),
        children: [
          flowTaskOf(demoEcho, { n: 1 }),
          {
            task: flowTaskOf(demoSum, null, { optional: true }),
            children: [flowTaskOf(demoSleep, { ms: 1 })],
          },
        ],
        idempotencyKey: 'direct-flow-1',
      };
      const { id, ids, task, created } = await flows.enqueueFlow(flow);
      expect(created).toBe(true);
      expect(task).toMatchObject({ id, status: 'WAITING_CHILDREN', children: { total: 2, pending: 2 } });
      expect(ids).toEqual({
        id,
        children: [
          { id: expect.any(String) },
          { id: expect.any(String), children: [{ id: expect.any(String) }] },
        ],
      });
      const nested = ids.children![1]!;
      const viaApi = await apiCall('GET', `/tasks/${nested.id}`, FLOWS);
      expect(viaApi.body.task).toMatchObject({
        status: 'WAITING_CHILDREN',
        parentId: id,
        optional: true,
        children: { total: 1, pending: 1 },
      });
      expect(await flows.get(nested.children![0]!.id)).toMatchObject({
        status: 'QUEUED',
        parentId: nested.id,
      });
      // The same flow under its key again: the first one, its ids the same; another flow under it: a conflict.
      expect(await flows.enqueueFlow(flow)).toMatchObject({ created: false, id, ids });
      const conflict = await refusal(
        flows.enqueueFlow({ ...flow, children: [flowTaskOf(demoEcho, { n: 2 })] }),
      );
      expect(conflict).toBeInstanceOf(ConflictError);
      expect(conflict).toMatchObject({ code: 'IDEMPOTENCY_CONFLICT', taskId: id });
    } finally {
      flows.close();
    }
  });

  it('a refused task anywhere in it: BadRequestError with the problem POST /flows answers, nothing written', async () => {
    const before = (await world.scanAll()).length;
    const body = {
      task: { type: 'demo.sum' },
      children: [{ task: { type: 'demo.sum' }, children: [{ type: 'demo.sleep', payload: { ms: 'x' } }] }],
    };
    const error = await refusal(client.enqueueFlow(body));
    expect(error).toBeInstanceOf(BadRequestError);
    expect(error.errors).toEqual([
      { field: 'children.0.children.0.payload.ms', message: expect.any(String) },
    ]);
    const viaApi = await apiCall('POST', '/flows', SESSION_2, body);
    expect(viaApi.status).toBe(400);
    expect(error.problem).toEqual(viaApi.body);
    // FAST_LEASES: 10 s at most; the flow's fields are the body's (whole seconds).
    const tooLong = await refusal(
      client.enqueueFlow({
        task: { type: 'demo.sum' },
        children: [{ type: 'demo.echo', timeoutSeconds: 20 }],
      }),
    );
    expect(tooLong.errors.map((e: { field: string }) => e.field)).toEqual(['children.0.timeoutSeconds']);
    const unknown = await refusal(
      client.enqueueFlow({ task: { type: 'demo.sum' }, children: [{ type: 'no.such' }] }),
    );
    expect(unknown.errors.map((e: { field: string }) => e.field)).toEqual(['children.0.type']);
    expect((await world.scanAll()).length).toBe(before);
  });
});

describe('the other calls', () => {
  it('an idempotent repeat answers the first task (created false); another payload under the key is a conflict', async () => {
    const first = await client.enqueue(demoEcho, { n: 1 }, { idempotencyKey: 'direct-k1', delay: 60_000 });
    const again = await client.enqueue(demoEcho, { n: 1 }, { idempotencyKey: 'direct-k1', delay: 60_000 });
    expect(first.created).toBe(true);
    expect(again).toMatchObject({ created: false, task: { id: first.task.id } });
    const conflict = await refusal(
      client.enqueue(demoEcho, { n: 2 }, { idempotencyKey: 'direct-k1', delay: 60_000 }),
    );
    expect(conflict).toBeInstanceOf(ConflictError);
    expect(conflict).toMatchObject({ code: 'IDEMPOTENCY_CONFLICT', taskId: first.task.id });
  });

  it("list reads the owner's tasks page by page, filtered as GET /tasks filters", async () => {
    const lister = clientFor('team-list');
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await lister.enqueue(demoEcho, i, { delay: 60_000 })).task.id);
    await lister.enqueue(demoSleep, { ms: 1 }, { delay: 60_000 });
    const seen: ClientTask[] = [];
    for await (const task of lister.list({ type: 'demo.echo', pageSize: 2 })) seen.push(task);
    expect(seen.map((t) => t.id).sort()).toEqual([...ids].sort());
    expect(seen.every((t) => t.status === 'QUEUED')).toBe(true);
    const none: ClientTask[] = [];
    for await (const task of lister.list({ status: 'SUCCESS' })) none.push(task);
    expect(none).toEqual([]);
    const badPage = await refusal(lister.list({ pageSize: 500 })[Symbol.asyncIterator]().next());
    expect(badPage).toBeInstanceOf(BadRequestError);
    expect(badPage.errors[0].field).toBe('limit');
    lister.close();
  });

  it('cancel and retry: a queued task ends CANCELLED, a second cancel conflicts, retry queues it again', async () => {
    const { task } = await client.enqueue(demoEcho, 'to cancel', { delay: 60_000 });
    expect((await client.cancel(task.id)).status).toBe('CANCELLED');
    const again = await refusal(client.cancel(task.id));
    expect(again).toBeInstanceOf(ConflictError);
    expect(again).toMatchObject({ code: 'TASK_STATE_CONFLICT', taskStatus: 'CANCELLED' });
    expect(await client.retry(task.id)).toMatchObject({ id: task.id, status: 'QUEUED', attempts: 0 });
  });

  it('a direct cancel of a queued task is counted in GET /stats at once (the client writes the count itself)', async () => {
    const caller = 'arn:aws:iam::123456789012:user/direct-canceller';
    const canceller = clientFor(ownerOfArn(caller));
    const { task } = await canceller.enqueue(demoEcho, 'counted', { delay: 60_000 });
    await canceller.cancel(task.id);
    const stats = await apiCall('GET', '/stats', caller);
    expect(stats.status).toBe(200);
    const cancelled = (stats.body.minutes as { types: Record<string, { cancelled: number }> }[]).map(
      (m) => m.types['demo.echo']?.cancelled ?? 0,
    );
    expect(cancelled.reduce((a, b) => a + b, 0)).toBe(1);
    canceller.close();
  });

  it("get of a missing id, or of another owner's task: NotFoundError TASK_NOT_FOUND", async () => {
    const missing = await refusal(client.get('no-such-task'));
    expect(missing).toBeInstanceOf(NotFoundError);
    expect(missing).toMatchObject({ status: 404, code: 'TASK_NOT_FOUND' });
    const { task } = await clientFor('team-other').enqueue(demoEcho, 'theirs', { delay: 60_000 });
    expect(await refusal(client.get(task.id))).toBeInstanceOf(NotFoundError);
  });

  it('an owner given is taken as it is; with an endpoint and no owner the client refuses to start', async () => {
    const team = clientFor('team-a');
    const { task } = await team.enqueue(demoEcho, 'team', { delay: 60_000 });
    expect(await team.owner()).toBe('team-a');
    expect((await world.store.get({ id: task.id, owner: 'team-a' })).id).toBe(task.id);
    await expect(world.store.get({ id: task.id, owner: ROLE })).rejects.toThrow(/does not exist/);
    team.close();
    expect(() =>
      createDirectClient({ tableName: world.config.tableName, endpoint: dynamo.endpoint, definitions: [] }),
    ).toThrow(ClientOptionsError);
    expect(() =>
      createDirectClient({ tableName: 'x', endpoint: dynamo.endpoint, owner: 'o', definitions: [] }),
    ).toThrow(/tableName/);
  });

  it('a failed identity lookup is not an API problem: it ends the call (and enqueueMany) as it is, and is asked again', async () => {
    let lookups = 0;
    const stsDown = new Error('connect ETIMEDOUT sts.us-east-1.amazonaws.com');
    const flaky = clientFor('unused', {
      owner: undefined,
      callerArn: async () => {
        if (++lookups <= 2) throw stsDown;
        return SESSION_2;
      },
    });
    expect(await refusal(flaky.enqueue(demoEcho, 1, { delay: 60_000 }))).toBe(stsDown);
    expect(await refusal(flaky.enqueueMany([taskOf(demoEcho, 2, { delay: 60_000 })]))).toBe(stsDown);
    expect(await flaky.owner()).toBe(ROLE);
    expect(lookups).toBe(3);
    flaky.close();
  });

  it('enqueueMany: each task on its own, outcomes by index, totals, onBatch per 100', async () => {
    const before = (await world.scanAll()).length;
    const batches: number[] = [];
    const result = await client.enqueueMany(
      [
        taskOf(demoEcho, 'a', { delay: 60_000 }),
        taskOf(demoSleep, { ms: 'x' } as never),
        taskOf(demoEcho, 'b', { delay: 60_000, idempotencyKey: 'many-k' }),
        taskOf(demoEcho, 'b', { delay: 60_000, idempotencyKey: 'many-k' }),
        // Refused before any write (cheap on dynalite), they still fill a batch of their own.
        ...Array.from({ length: 100 }, () => taskOf(demoSleep, { ms: -1 })),
      ],
      { onBatch: (outcomes) => batches.push(outcomes.length) },
    );
    expect(result).toMatchObject({ created: 2, existing: 1, failed: 101 });
    // Two batches in flight at once: either may be answered first.
    expect(batches.sort((a, b) => a - b)).toEqual([4, 100]);
    expect(result.outcomes.map((o) => o.index)).toEqual(Array.from({ length: 104 }, (_, i) => i));
    expect(result.outcomes.slice(0, 4).map((o) => o.outcome)).toEqual([
      'created',
      'failed',
      'created',
      'existing',
    ]);
    const failed = result.outcomes[1]!;
    expect(failed.outcome === 'failed' && failed.error).toBeInstanceOf(BadRequestError);
    // The two tasks created, each with its owner-index entry, and nothing for the refused ones.
    const written = (await world.scanAll()).length - before;
    expect(written).toBe(2);
  });
});

describe('waitFor and errors', () => {
  it('waits longer each time, up to 5 s, and gives up at the timeout with the task as last read', async () => {
    const { task } = await clientFor('team-wait').enqueue(demoEcho, 'never run', { delay: 60_000 });
    const clock = new ManualClock();
    const waits: number[] = [];
    const waiting = clientFor('team-wait', {
      clock,
      sleep: async (ms) => {
        waits.push(ms);
        clock.advance(ms);
      },
    });
    const error = await refusal(waiting.waitFor(task.id, { timeout: 20_000 }));
    expect(error).toBeInstanceOf(WaitTimeoutError);
    expect(error.task).toMatchObject({ id: task.id, status: 'QUEUED' });
    expect(waits[0]).toBe(250);
    expect(Math.max(...waits)).toBe(5_000);
    expect(waits.slice(1).every((w, i) => w >= waits[i]! || i === waits.length - 2)).toBe(true);
    expect(waits.reduce((a, b) => a + b, 0)).toBe(20_000);
    const stop = new AbortController();
    stop.abort(new Error('caller gave up'));
    await expect(waiting.waitFor(task.id, { signal: stop.signal })).rejects.toThrow('caller gave up');
    waiting.close();
  });

  it('throttling the SDK could not retry away is ServiceUnavailableError; other AWS errors stay as they are', () => {
    const throttled = new ThrottlingException({ message: 'Rate exceeded', $metadata: {} });
    const mapped = clientErrorOf(throttled);
    expect(mapped).toBeInstanceOf(ServiceUnavailableError);
    expect(mapped).toMatchObject({ status: 503, code: 'THROTTLED', retryAfterSeconds: 1, cause: throttled });
    const denied = Object.assign(new Error('not authorized to perform: dynamodb:PutItem'), {
      name: 'AccessDeniedException',
    });
    expect(clientErrorOf(denied)).toBe(denied);
  });
});
