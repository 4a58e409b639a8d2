import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { defineTask } from '../shared/tasks/define.js';
import { addCost } from '../shared/store/task-cost.js';
import { createWorkerWorld } from './support/worker-world.js';
import { ClaimState } from '../shared/store/claim-state.js';
import type { Lease } from '../shared/task-inputs.js';
import { startTestDynamo, type TestDynamo } from './support/test-dynamo.js';
import { createTestStore, type TestStore } from './support/test-store.js';
import { QUERY_OPERATIONS, READ_OPERATIONS, WRITE_OPERATIONS } from './support/request-meter.js';

let server: TestDynamo;
beforeAll(async () => {
  server = await startTestDynamo();
});
afterAll(() => server.close());

const TYPE = 'report.build';
const OWNER = 'arn:aws:iam::123456789012:role/reports';

/**
 * What the test's own meter (SDK middleware on the test's client, counting each request and the
 * capacity dynalite reports) counted, less the claim rounds' ready-index queries: those are the
 * polling's cost, which no task records (task-cost.ts).
 */
function counted(s: TestStore) {
  const units = (ops: string[]) => ops.reduce((sum, op) => sum + (s.meter.tableCapacity.get(op) ?? 0), 0);
  return {
    requests: s.meter.count(...WRITE_OPERATIONS, ...READ_OPERATIONS),
    readUnits: units(READ_OPERATIONS),
    writeUnits: units(WRITE_OPERATIONS),
  };
}

const renew = async (s: TestStore, lease: Lease) => {
  s.clock.advance(s.config.heartbeatIntervalMs);
  const [renewal] = await s.store.renew({ leases: [lease] });
  if (renewal?.outcome !== 'renewed') throw new Error(`renewal: ${renewal?.outcome}`);
  return renewal.lease;
};

describe('every task records what it cost', () => {
  it('a task’s cost equals what the request meter counted for it: enqueue, claim, payload read, renewals, result item, outcome', async () => {
    const s = await createTestStore(server.endpoint);
    s.meter.reset();
    const { task } = await s.store.enqueue({
      type: TYPE,
      owner: OWNER,
      payload: { rows: 'r'.repeat(3_000) },
    });
    const { claimed } = await s.store.claim({ workerId: 'w1', types: [TYPE], max: 1 });
    let lease = claimed[0]!.lease;
    expect(claimed[0]!.task.payload).toEqual({ rows: 'r'.repeat(3_000) });
    for (let i = 0; i < 3; i++) lease = await renew(s, lease);
    // The worker adds its handler's time to the lease before the outcome write (execution.ts).
    lease = { ...lease, unrecorded: { ...lease.unrecorded, handlerMs: 31_250 } };
    await s.store.complete({ lease, result: { url: `s3://bucket/${'k'.repeat(500)}` } });
    const meter = counted(s);
    expect(s.meter.count(...QUERY_OPERATIONS)).toBeGreaterThan(0);

    const { cost } = await s.store.get({ id: task.id });
    expect(cost).toEqual({
      requests: meter.requests,
      readUnits: meter.readUnits,
      writeUnits: meter.writeUnits,
      // Index writes (dynalite reports none): enqueue puts the ready and owner entries (2), the claim
      // moves the ready entry to the lease sweep (2), the three renewals leave the sweep key (with the
      // defaults one in five moves it), the outcome removes the sweep entry (1).
      indexWriteUnits: 5,
      handlerMs: 31_250,
    });
    // Payload item + task put; claim; payload read; 3 renewals; result item + outcome.
    expect(cost!.requests).toBe(2 + 1 + 1 + 3 + 2);
  });

  it('a retried task sums every attempt with its promotion and recovery’s fix; a holder that died takes its unrecorded claim with it', async () => {
    const s = await createTestStore(
      server.endpoint,
      { backoffBaseMs: 1_000, backoffMaxMs: 1_000 },
      { random: () => 0 },
    );
    s.meter.reset();
    const { task } = await s.store.enqueue({ type: TYPE, owner: OWNER, payload: 1, maxAttempts: 3 });
    const first = (await s.store.claim({ workerId: 'w1', types: [TYPE], max: 1 })).claimed[0]!.lease;
    await s.store.fail({ lease: first, error: `exploded: ${'e'.repeat(400)}` });
    s.clock.advance(1_000);
    expect(await s.store.promote({ id: task.id })).toBe(true);
    // The second holder dies: recovery requeues the task.
    await s.store.claim({ workerId: 'w2', types: [TYPE], max: 1 });
    s.clock.advance(s.config.leaseTimeoutMs + s.config.clockSkewMs + 1_000);
    s.meter.reset();
    await s.store.recover();
    // Recovery's sweep reads are its own polling; its fix is the task's.
    const recoveryFix = s.meter.count('UpdateItem');
    const recoveryWriteUnits = s.meter.tableCapacity.get('UpdateItem') ?? 0;
    expect(recoveryFix).toBe(1);
    const third = (await s.store.claim({ workerId: 'w3', types: [TYPE], max: 1 })).claimed[0]!.lease;
    await s.store.complete({ lease: third, result: 'ok' });
    const { cost, attempts, status } = await s.store.get({ id: task.id });
    expect({ attempts, status }).toEqual({ attempts: 3, status: 'SUCCESS' });
    // The dead holder's claim was never recorded (its lease carried it, and it died): every other
    // request for the task was. Counted from the start: enqueue, claim, error item, fail, promote,
    // [lost claim], recovery's fix, claim, complete.
    expect(cost!.requests).toBe(1 + 1 + 1 + 1 + 1 + 1 + 1 + 1);
    expect(recoveryWriteUnits).toBe(1);
  });

  it('lost races are no task’s cost: each task is charged its own writes, exactly once', async () => {
    const s = await createTestStore(server.endpoint);
    const peer = s.peer();
    const tasks = 60;
    await Promise.all(
      // One priority above the default: every task in the type's one lane, where both workers read the same heads.
      Array.from({ length: tasks }, (_, n) =>
        s.store.enqueue({ type: TYPE, owner: OWNER, payload: n, priority: 5 }),
      ),
    );
    s.meter.reset();
    const memories = [new ClaimState(), new ClaimState()];
    let lost = 0;
    let done = 0;
    for (let round = 0; done < tasks && round < 100; round++) {
      const rounds = await Promise.all(
        [s.store, peer].map((store, i) =>
          store.claim({ workerId: `w${i}`, types: [TYPE], max: 8 }, memories[i]),
        ),
      );
      for (const r of rounds) {
        lost += r.lostRaces;
        await Promise.all(r.claimed.map((c) => s.store.complete({ lease: c.lease })));
        done += r.claimed.length;
      }
    }
    expect(done).toBe(tasks);
    // Two workers on one partition: some of their claim writes met the other's.
    expect(lost).toBeGreaterThan(0);
    const listed = [];
    for (let cursor: string | undefined, first = true; first || cursor; first = false) {
      const page = await s.store.list({ owner: OWNER, limit: 100, ...(cursor ? { cursor } : {}) });
      listed.push(...page.tasks);
      cursor = page.nextCursor;
    }
    const charged = listed.reduce((sum, t) => sum + t.cost!.writeUnits, 0);
    // Each task: put 1, claim 1, complete 1. The refused claim writes were on other tasks' items
    // (review 2, finding 9: they were shared out to the round's wins, across owners).
    expect(charged).toBe(3 * tasks);
    expect(listed.every((t) => t.cost!.writeUnits === 3)).toBe(true);
  });

  it("a claim that first frees a dead holder's slot is not charged for that other task's recovery", async () => {
    const s = await createTestStore(server.endpoint, { typeConcurrency: 'limited=1,clean=1' });
    const cost = async (id: string) => (await s.store.get({ id })).cost!;
    const runOne = async (type: string, owner: string) => {
      const { task } = await s.store.enqueue({ type, owner });
      const [claimed] = (await s.store.claim({ workerId: 'w2', types: [type], max: 1 })).claimed;
      expect(claimed?.task.id).toBe(task.id);
      await s.store.complete({ lease: claimed!.lease });
      return task.id;
    };
    // A holder of the one slot dies holding another owner's task.
    const { task: stranded } = await s.store.enqueue({ type: 'limited', owner: 'someone-else' });
    expect((await s.store.claim({ workerId: 'dead', types: ['limited'], max: 1 })).claimed).toHaveLength(1);
    s.clock.advance(s.config.leaseTimeoutMs + s.config.clockSkewMs + 1);
    // The next claim takes the expired slot, and first requeues the dead holder's task.
    const behindRecovery = await runOne('limited', OWNER);
    expect((await s.store.get({ id: stranded.id })).status).toBe('QUEUED');
    const clean = await runOne('clean', OWNER);
    expect(await cost(behindRecovery)).toEqual(await cost(clean));
    // The fix is on the task it fixed, once.
    expect((await cost(stranded.id)).writeUnits).toBeGreaterThan(1);
  });
});

describe('through the worker runtime', () => {
  it('the handler’s time is in the task’s cost, and a finished task’s cost is summed by type and owner in the metrics', async () => {
    const w = await createWorkerWorld(server.endpoint, [
      defineTask({
        name: 'cost.sleep',
        schema: z.object({ ms: z.number() }),
        handler: async ({ ms }) => {
          await new Promise((r) => setTimeout(r, ms));
          return { slept: ms };
        },
      }),
    ]);
    const ids = [];
    for (const owner of ['alice', 'alice', 'bob'])
      ids.push((await w.store.enqueue({ type: 'cost.sleep', owner, payload: { ms: 120 } })).task.id);
    const worker = w.worker('w1');
    const end = Date.now() + 20_000;
    await worker.run({ remainingTimeMs: () => end - Date.now(), idleStopMs: 500 });
    const tasks = await Promise.all(ids.map((id) => w.store.get({ id })));
    for (const t of tasks) {
      expect(t.status).toBe('SUCCESS');
      expect(t.cost!.handlerMs).toBeGreaterThanOrEqual(120);
      // Enqueue, claim, complete: one write of the task item each (more if a send met its deadline and was resent).
      expect(t.cost!.requests).toBeGreaterThanOrEqual(3);
      expect(t.cost!.writeUnits).toBeGreaterThanOrEqual(3);
      expect(t.cost!.indexWriteUnits).toBe(5);
    }
    const byOwner = worker.recorded.costs.get('cost.sleep')!;
    expect([...byOwner.keys()].sort()).toEqual(['alice', 'bob']);
    expect(byOwner.get('alice')).toEqual(addCost(tasks[0]!.cost, tasks[1]!.cost));
    expect(byOwner.get('bob')).toEqual(addCost(tasks[2]!.cost));
  });
});
