import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sampledLifecycle } from '../bench/measures/requests-per-task.js';
import { startTestDynamo, type TestDynamo } from './support/test-dynamo.js';
import { createTestStore } from './support/test-store.js';
import { QUERY_OPERATIONS, READ_OPERATIONS, WRITE_OPERATIONS } from './support/request-meter.js';

let server: TestDynamo;
beforeAll(async () => {
  server = await startTestDynamo();
});
afterAll(() => server.close());

describe('what one short task costs in DynamoDB requests and write units', () => {
  it('enqueue, claim and complete are three writes; a drain costs at most 0.25 queries per task', async () => {
    const s = await createTestStore(server.endpoint);
    const tasks = 400;
    for (let i = 0; i < tasks; i += 50) await Promise.all(Array.from({ length: 50 }, () => s.store.enqueue({ type: 'short', owner: 'o', payload: { n: i } })));
    const enqueueWrites = s.meter.count(...WRITE_OPERATIONS);
    s.meter.reset();
    let done = 0;
    for (;;) {
      const { claimed } = await s.store.claim({ workerId: 'drainer', types: ['short'], max: 8 });
      if (claimed.length === 0) break;
      await Promise.all(claimed.map((c) => s.store.complete({ lease: c.lease })));
      done += claimed.length;
    }
    expect(done).toBe(tasks);
    const perTask = {
      writes: (enqueueWrites + s.meter.count(...WRITE_OPERATIONS)) / tasks,
      queries: s.meter.count(...QUERY_OPERATIONS) / tasks,
      reads: s.meter.count(...READ_OPERATIONS) / tasks,
    };
    console.info(`per short task: ${JSON.stringify(perTask)} (requests by operation: ${JSON.stringify(Object.fromEntries(s.meter.sent))})`);
    expect(perTask.writes).toBe(3);
    expect(perTask.reads).toBe(0);
    expect(perTask.queries).toBeLessThanOrEqual(0.25);
  });

  it('counts 8 write units with index writes for enqueue -> claim -> complete, and 1 for most renewals', async () => {
    const s = await createTestStore(server.endpoint);
    const { steps, renewals } = await sampledLifecycle(server.endpoint, s.config.tableName);
    console.info(`write units: ${JSON.stringify({ ...steps, renewals })}`);
    expect(steps.enqueue).toMatchObject({ table: 1, indexes: { ready: 1, owner: 1, sweep: 0 } });
    expect(steps.claim).toMatchObject({ table: 1, indexes: { ready: 1, sweep: 1, owner: 0 } });
    expect(renewals[0]).toBe(1);
    // With the defaults (lease 60 s, heartbeat 10 s, skew 5 s) the fifth renewal outruns the slack and moves the sweep key.
    expect(renewals).toEqual([1, 1, 1, 1, 3]);
    expect(steps.complete).toMatchObject({ table: 1, indexes: { sweep: 1, ready: 0, owner: 0 } });
    expect(steps.enqueue.total + steps.claim.total + steps.complete.total).toBeLessThanOrEqual(8.5);
  });
});
