/**
 * Strict priority across shards and types: a claim never takes a lower-priority due task while a
 * higher-priority due task of a type the worker serves waits (priority DESC, then due time,
 * then age). Default-priority tasks are spread over 16 shards; every other priority waits in its
 * type's lane (table-layout.ts, claim-order.ts).
 */
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { SHARD_COUNT, shardForId, INDEX, lanePartition } from '../shared/table-layout.js';
import { defineTask } from '../shared/tasks/define.js';
import { createTestStore } from './support/test-store.js';
import { startTestDynamo, type TestDynamo } from './support/test-dynamo.js';
import { createWorkerWorld, sleep } from './support/worker-world.js';

let server: TestDynamo;
beforeAll(async () => {
  server = await startTestDynamo();
});
afterAll(() => server.close());

/** Claims one task at a time until none is left; the priorities in the order they were claimed. */
async function claimOneByOne(
  store: Awaited<ReturnType<typeof createTestStore>>['store'],
  types: string[],
  priorities: Map<string, number>,
): Promise<number[]> {
  const order: number[] = [];
  for (let round = 0; round < 200; round++) {
    const { claimed } = await store.claim({ workerId: 'w', types, max: 1 });
    if (claimed.length === 0) break;
    for (const c of claimed) order.push(priorities.get(c.task.id)!);
  }
  return order;
}

describe('strict priority across shards and types', () => {
  it('one worker, two types, tasks spread over every shard: each claim takes the highest waiting priority', async () => {
    const t = await createTestStore(server.endpoint);
    const priorities = new Map<string, number>();
    // Enqueued by another process (a peer store), so this worker learns of them only by reading.
    const producer = t.peer();
    const levels = [3, -2, 10, 0, 7, 1, -5, 5, 0, 0, 2, -1];
    let n = 0;
    for (const type of ['alpha', 'beta']) {
      for (const priority of levels) {
        const { task } = await producer.enqueue({ type, owner: 'o', payload: n++, priority });
        priorities.set(task.id, priority);
      }
    }
    const defaults = [...priorities].filter(([, p]) => p === 0).map(([id]) => shardForId(id));
    expect(new Set(defaults).size, 'default tasks spread over several shards').toBeGreaterThan(2);

    const order = await claimOneByOne(t.store, ['alpha', 'beta'], priorities);
    expect(order).toHaveLength(priorities.size);
    expect(order).toEqual([...order].sort((a, b) => b - a));
  });

  it('a hold-out: 3, -2, 10, 0, 7, 1, -5, 5 queued behind a running task start highest first', async () => {
    let release!: () => void;
    const blocker = new Promise<void>((r) => (release = r));
    const started: number[] = [];
    const w = await createWorkerWorld(
      server.endpoint,
      [
        defineTask({
          name: 'job',
          schema: z.object({ priority: z.number(), block: z.boolean().optional() }),
          handler: async ({ priority, block }) => {
            if (block) await blocker;
            else started.push(priority);
          },
        }),
      ],
      { workerConcurrency: 1, idleStopMs: 500 },
    );
    await w.submitter.enqueue({ type: 'job', owner: 'o', payload: { priority: 0, block: true } });
    const worker = w.worker('only');
    const run = worker.run();
    while (worker.running === 0) await sleep(10);
    // Queued by another process while the only slot is busy.
    const producer = w.peer();
    for (const priority of [3, -2, 10, 0, 7, 1, -5, 5])
      await producer.enqueue({ type: 'job', owner: 'o', payload: { priority }, priority });
    // The running task outlasts one poll interval, as a real one does.
    await sleep(w.config.pollIntervalMs * 2);
    release();
    await run;
    expect(started).toEqual([10, 7, 5, 3, 1, 0, -2, -5]);
  });

  it('a lower priority never starts while a default task waits in a shard the worker has not read yet', async () => {
    const t = await createTestStore(server.endpoint);
    const priorities = new Map<string, number>();
    for (let i = 0; i < 3; i++)
      priorities.set(
        (await t.store.enqueue({ type: 'low', owner: 'o', payload: i, priority: -1 })).task.id,
        -1,
      );
    // One default task, in whichever shard its id lands.
    priorities.set((await t.store.enqueue({ type: 'low', owner: 'o', payload: 'x' })).task.id, 0);
    const order = await claimOneByOne(t.store, ['low'], priorities);
    expect(order).toEqual([0, -1, -1, -1]);
  });

  it('a high-priority task readied by another process is taken within one poll interval, ahead of a deep default backlog', async () => {
    const t = await createTestStore(server.endpoint, { pollIntervalMs: 1_000 });
    for (let i = 0; i < 40; i++) await t.store.enqueue({ type: 'bulk', owner: 'o', payload: i });
    const first = await t.store.claim({ workerId: 'w', types: ['bulk'], max: 4 });
    expect(first.claimed).toHaveLength(4);
    const urgent = (await t.peer().enqueue({ type: 'bulk', owner: 'o', payload: 'urgent', priority: 50 }))
      .task.id;
    t.clock.advance(1_000);
    const next = await t.store.claim({ workerId: 'w', types: ['bulk'], max: 4 });
    expect(next.claimed[0]?.task.id).toBe(urgent);
  });

  it('all tasks at the default priority stay spread over the shards: no lane, no hot partition', async () => {
    const t = await createTestStore(server.endpoint);
    for (let i = 0; i < 64; i++) await t.store.enqueue({ type: 'flat', owner: 'o', payload: i });
    const lane = await t.doc.send(
      new QueryCommand({
        TableName: t.config.tableName,
        IndexName: INDEX.ready.name,
        KeyConditionExpression: '#p = :p',
        ExpressionAttributeNames: { '#p': INDEX.ready.partition },
        ExpressionAttributeValues: { ':p': lanePartition('flat') },
      }),
    );
    expect(lane.Count).toBe(0);
    const partitions = new Set((await t.scanAll()).map((i) => i[INDEX.ready.partition]).filter(Boolean));
    expect(partitions.size).toBeGreaterThan(SHARD_COUNT / 2);
  });
});
