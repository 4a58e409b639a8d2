import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { ensureTable } from '../shared/store/table-setup.js';
import { TaskStore } from '../shared/store/task-store.js';
import { loadConfig } from '../shared/config.js';
import { startTestDynamo, type TestDynamo } from './support/test-dynamo.js';
import { ALICE, apiEvent } from './support/api-events.js';
import { ScheduleStore } from '../shared/schedules/schedule-store.js';
import { sleep } from './support/worker-world.js';
import { ANSWER_MARGIN_MS } from '../shared/api/answer-deadline.js';

let server: TestDynamo;
let fns: {
  api: typeof import('../functions/api.js');
  worker: typeof import('../functions/worker.js');
  recovery: typeof import('../functions/recovery.js');
  fire: typeof import('../functions/fire.js');
};
let store: TaskStore;
const table = `fn-${process.pid}`;

/** A Scheduler target event, as EventBridge Scheduler delivers it to the worker and recovery functions. */
const schedulerEvent = { 'scheduled-time': '2026-11-30T09:00:00Z', source: 'leasehold.schedule' };
const lambdaContext = (ms: number) => {
  const until = Date.now() + ms;
  return { getRemainingTimeInMillis: () => until - Date.now(), awsRequestId: `req-${Math.random()}` };
};

beforeAll(async () => {
  server = await startTestDynamo();
  const env = {
    LEASEHOLD_DYNAMODB_ENDPOINT: server.endpoint,
    LEASEHOLD_TABLE: table,
    LEASEHOLD_LEASE_TIMEOUT_MS: '1500',
    // Request deadlines of 250 ms, not 150: the recovery sweep's queries on DynamoDB Local, beside the
    // rest of the suite on two cores, missed 150 ms (the sweep then fails, as a Lambda would).
    LEASEHOLD_HEARTBEAT_INTERVAL_MS: '300',
    LEASEHOLD_REQUEST_DEADLINE_MS: '250',
    LEASEHOLD_CLOCK_SKEW_MS: '100',
    LEASEHOLD_MAX_EXECUTION_MS: '10000',
    LEASEHOLD_DRAIN_MARGIN_MS: '600',
    LEASEHOLD_POLL_INTERVAL_MS: '20',
    LEASEHOLD_IDLE_STOP_MS: '300',
    LEASEHOLD_RECOVERY_INTERVAL_MS: '2000',
    LEASEHOLD_BACKOFF_BASE_MS: '20',
    LEASEHOLD_BACKOFF_MAX_MS: '50',
    POWERTOOLS_LOG_LEVEL: 'SILENT',
  };
  Object.assign(process.env, env);
  const client = new DynamoDBClient({
    endpoint: server.endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
  });
  await ensureTable(client, table);
  store = new TaskStore({ doc: DynamoDBDocumentClient.from(client), config: loadConfig(env) });
  fns = {
    api: await import('../functions/api.js'),
    worker: await import('../functions/worker.js'),
    recovery: await import('../functions/recovery.js'),
    fire: await import('../functions/fire.js'),
  };
});
afterAll(() => server.close());

const enqueue = async (body: unknown) =>
  JSON.parse((await fns.api.handler(apiEvent({ method: 'POST', path: '/tasks', body }))).body).task
    .id as string;

describe('the Lambda functions', () => {
  it('worker: a scheduled invocation runs the queued tasks to their end and emits EMF metrics', async () => {
    const echo = await enqueue({ type: 'demo.echo', payload: { a: 1 } });
    const flaky = await enqueue({ type: 'demo.fail', payload: { failTimes: 1 } });
    const sleeper = await enqueue({ type: 'demo.sleep', payload: { ms: 450 } });
    const out = vi.spyOn(process.stdout, 'write');
    const summary = await fns.worker.handler(schedulerEvent, lambdaContext(30_000));
    const emitted = out.mock.calls.map(([chunk]) => String(chunk)).filter((line) => line.includes('"_aws"'));
    out.mockRestore();
    expect(summary).toMatchObject({ claimed: 4, stoppedBecause: 'idle', timersArmed: 0 });
    expect((await store.get({ id: echo })).result).toEqual({ a: 1 });
    expect(await store.get({ id: flaky })).toMatchObject({ status: 'SUCCESS', attempts: 2 });
    expect(await store.get({ id: sleeper })).toMatchObject({
      status: 'SUCCESS',
      progress: expect.any(Number),
    });
    const documents = emitted.map((line) => JSON.parse(line) as Record<string, unknown>);
    const emf = documents.findLast((d) => 'Claims' in d)!;
    // Each finished task's cost, summed per type (a dimension) with its owner as a property.
    const costs = documents.filter((d) => 'TaskWriteUnits' in d);
    expect(costs.map((d) => d.TaskType).sort()).toEqual(['demo.echo', 'demo.fail', 'demo.sleep']);
    for (const d of costs) {
      expect(d).toMatchObject({ service: 'leasehold-worker', owner: expect.any(String) });
      expect(
        (d._aws as { CloudWatchMetrics: { Dimensions: string[][] }[] }).CloudWatchMetrics[0]!.Dimensions,
      ).toEqual([['service', 'TaskType']]);
    }
    const sleeperCost = costs.find((d) => d.TaskType === 'demo.sleep')!;
    expect(sleeperCost.TaskHandlerMs).toBeGreaterThanOrEqual(450);
    expect(emf).toMatchObject({
      service: 'leasehold-worker',
      Claims: expect.anything(),
      TasksSucceeded: expect.anything(),
      LeaseRenewals: expect.anything(),
    });
    // Over the invocation's flushes: a metric lands in the flush of the interval it happened in (the
    // retried task's promotion and claim may come after the last renewal's flush).
    const names = documents.flatMap((d) =>
      (d._aws as { CloudWatchMetrics: { Metrics: { Name: string }[] }[] }).CloudWatchMetrics[0]!.Metrics.map(
        (m) => m.Name,
      ),
    );
    expect(names).toEqual(
      expect.arrayContaining([
        'Claims',
        'WastedClaimWrites',
        'TasksSucceeded',
        'TasksRetried',
        'TaskDuration',
        'QueueWait',
        'EventLoopLag',
        'LeaseRenewals',
        'LeaseRenewalsOk',
      ]),
    );
  });

  it('api: a request that would run past the function’s timeout is answered 504 DEADLINE before it, to send again', async () => {
    const list = apiEvent({ method: 'GET', path: '/tasks' });
    // Time enough: the answer itself.
    expect((await fns.api.handler(list, lambdaContext(10_000))).statusCode).toBe(200);
    // Less left than the answer's margin: answered at once, before its DynamoDB read returns.
    const late = await fns.api.handler(list, lambdaContext(ANSWER_MARGIN_MS - 100));
    expect(late.statusCode).toBe(504);
    expect(late.headers).toMatchObject({ 'retry-after': '1' });
    expect(JSON.parse(late.body)).toMatchObject({ code: 'DEADLINE', title: 'Gateway Timeout' });
  });

  it('worker: an invocation with too little time left claims nothing', async () => {
    const id = await enqueue({ type: 'demo.echo' });
    const summary = await fns.worker.handler(schedulerEvent, lambdaContext(5_000));
    expect(summary).toMatchObject({ claimed: 0, stoppedBecause: 'deadline', timersArmed: 0 });
    expect((await store.get({ id })).status).toBe('QUEUED');
    await fns.worker.handler(schedulerEvent, lambdaContext(30_000));
    expect((await store.get({ id })).status).toBe('SUCCESS');
  });

  it('recovery: one sweep requeues a task whose holder died', async () => {
    const id = await enqueue({ type: 'demo.echo' });
    const { claimed } = await store.claim({ workerId: 'died', types: ['demo.echo'], max: 1 });
    expect(claimed.map((c) => c.task.id)).toEqual([id]);
    await sleep(1_500 + 100 + 50);
    const report = await fns.recovery.handler();
    expect(report).toMatchObject({ requeued: 1, failed: 0, truncated: false });
    expect(await store.get({ id })).toMatchObject({ status: 'QUEUED', attempts: 1 });
  });

  it('fire: a schedule tick delivered twice (Scheduler is at-least-once) enqueues one task; a malformed event is dropped', async () => {
    const put = await fns.api.handler(
      apiEvent({
        method: 'PUT',
        path: '/schedules/nightly',
        body: { expression: 'cron(0 2 * * ? *)', task: { type: 'demo.echo', payload: { n: 1 } } },
      }),
    );
    expect(put.statusCode).toBe(201);
    // As the EventBridge schedule's target input carries it: the owner and the generation it was made for.
    const { generation } = (await new ScheduleStore(store.ctx).get(ALICE, 'nightly'))!;
    const event = {
      scheduleName: 'nightly',
      owner: ALICE,
      generation,
      scheduledTime: '2026-12-01T02:00:00Z',
    };
    const first = await fns.fire.handler(event);
    const second = await fns.fire.handler(event);
    expect(first).toMatchObject({ fired: true, created: true });
    expect(second).toMatchObject({
      fired: true,
      created: false,
      taskId: (first as { taskId: string }).taskId,
    });
    // One of a schedule made before names were per owner (no owner, no generation): dropped.
    expect(
      await fns.fire.handler({ scheduleName: 'nightly', scheduledTime: '2026-12-01T02:00:00Z' }),
    ).toEqual({
      fired: false,
      reason: 'malformed-event',
    });
    // One of the name's earlier creation: nothing fired.
    expect(await fns.fire.handler({ ...event, generation: 'an-earlier-one' })).toMatchObject({
      fired: false,
      reason: 'stale-generation',
    });
  });
});
