/**
 * Recovery's kick hands what its sweep readied to the worker it starts by key (functions/recovery.ts):
 * the started invocation takes each task with one conditional write, never relying on a read of the
 * ready index, which may not show the task yet. (Found in the sim, whose index lags: a read-all kick's
 * worker found nothing, returned, and the requeued task waited for the next tick.) The Lambda Invoke
 * goes to a local HTTP endpoint that records each start event.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import type { TaskStore } from '../shared/store/task-store.js';
import { systemClock } from '../shared/clock.js';
import { createTestStore } from './support/test-store.js';
import { DEFAULT_PRIORITY, INDEX, readyPartition, taskKey } from '../shared/table-layout.js';
import type { WorkerStartEvent } from '../shared/fleet/worker-invoker.js';
import { startTestDynamo, type TestDynamo } from './support/test-dynamo.js';
import { sleep } from './support/worker-world.js';

let dynamo: TestDynamo;
let lambda: Server;
let store: TaskStore;
let recovery: typeof import('../functions/recovery.js');
const started: WorkerStartEvent[] = [];

beforeAll(async () => {
  dynamo = await startTestDynamo();
  lambda = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      if (req.url?.startsWith('/2015-03-31/functions/')) started.push(JSON.parse(body) as WorkerStartEvent);
      res.writeHead(202).end();
    });
  });
  await new Promise<void>((resolve) => lambda.listen(0, '127.0.0.1', resolve));
  // The store writes leases with the same protocol settings the recovery function reads from its environment.
  const protocol = {
    leaseTimeoutMs: 1500,
    heartbeatIntervalMs: 300,
    clockSkewMs: 100,
    requestDeadlineMs: 250,
  };
  ({ store } = await createTestStore(dynamo.endpoint, protocol, { clock: systemClock() }));
  Object.assign(process.env, {
    LEASEHOLD_DYNAMODB_ENDPOINT: dynamo.endpoint,
    LEASEHOLD_TABLE: store.ctx.tableName,
    LEASEHOLD_LEASE_TIMEOUT_MS: String(protocol.leaseTimeoutMs),
    LEASEHOLD_HEARTBEAT_INTERVAL_MS: String(protocol.heartbeatIntervalMs),
    LEASEHOLD_CLOCK_SKEW_MS: String(protocol.clockSkewMs),
    LEASEHOLD_REQUEST_DEADLINE_MS: String(protocol.requestDeadlineMs),
    LEASEHOLD_KICK_INTERVAL_MS: '1',
    LEASEHOLD_WORKER_FUNCTION_ARN: 'arn:aws:lambda:eu-west-1:123456789012:function:worker',
    AWS_ENDPOINT_URL_LAMBDA: `http://127.0.0.1:${(lambda.address() as AddressInfo).port}`,
    AWS_REGION: 'eu-west-1',
    AWS_ACCESS_KEY_ID: 'x',
    AWS_SECRET_ACCESS_KEY: 'x',
    POWERTOOLS_LOG_LEVEL: 'SILENT',
  });
  recovery = await import('../functions/recovery.js');
});
afterAll(async () => {
  await new Promise((resolve) => lambda.close(resolve));
  await dynamo.close();
});

/** Enqueues, claims as a holder that then dies, and waits until its lease (and the skew margin) ran out. */
async function orphaned(input: { type: string; priority?: number }): Promise<string> {
  const { task } = await store.enqueue({ owner: 'alice', payload: {}, ...input });
  const { claimed } = await store.claim({ workerId: 'died', types: [input.type], max: 10 });
  expect(claimed.map((c) => c.task.id)).toContain(task.id);
  return task.id;
}

describe("recovery's kick", () => {
  it('hands a requeued task and a promoted one to the worker it starts, by key; another priority is read', async () => {
    const requeued = await orphaned({ type: 'demo.echo' });
    const other = await orphaned({ type: 'demo.sleep', priority: 5 });
    const { task: delayed } = await store.enqueue({
      owner: 'alice',
      type: 'demo.echo',
      payload: {},
      delayMs: 1_000,
    });
    await sleep(1_500 + 100 + 100);
    started.length = 0;
    const report = await recovery.handler();
    expect(report).toMatchObject({ requeued: 2, promoted: 1 });
    const offered = started.flatMap((e) => e.offers ?? []).map((o) => o.taskId);
    expect(offered.sort()).toEqual([requeued, delayed.id].sort());
    // The priority-5 task is not handed over by key (claims keep priority order): the worker reads.
    expect(started.some((e) => e.readAll === true)).toBe(true);
    expect(offered).not.toContain(other);
    // The keys handed over are the ones the tasks now wait under in the ready index.
    for (const offer of started.flatMap((e) => e.offers ?? [])) {
      const { Item } = await store.ctx.doc.send(
        new GetCommand({ TableName: store.ctx.tableName, Key: taskKey(offer.taskId) }),
      );
      expect(Item).toMatchObject({
        status: 'QUEUED',
        [INDEX.ready.sort]: offer.readySk,
        [INDEX.ready.partition]: readyPartition(offer.type, offer.shard, DEFAULT_PRIORITY),
      });
    }
  });

  it('starts nothing when the sweep readied nothing', async () => {
    started.length = 0;
    const report = await recovery.handler();
    expect(report).toMatchObject({ requeued: 0, promoted: 0 });
    expect(started).toEqual([]);
  });
});
