import { storeError, storeResult } from '../shared/store/body-layout.js';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sampledLifecycle } from '../bench/measures/requests-per-task.js';
import { transitionCost, writeCost } from '../shared/store/write-units.js';
import { decideFailure, decideRecovery, leaseExpiry, sweepKeyAfterRenewal } from '../shared/lease-rules.js';
import { ClaimState } from '../shared/store/claim-state.js';
import type { Lease } from '../shared/task-inputs.js';
import type { TaskItem } from '../shared/store/task-item.js';
import { COST_ATTRIBUTES } from '../shared/store/task-cost.js';
import * as edge from '../shared/store/transitions.js';
import { taskKey } from '../shared/table-layout.js';
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
    for (let i = 0; i < tasks; i += 50)
      await Promise.all(
        Array.from({ length: 50 }, () => s.store.enqueue({ type: 'short', owner: 'o', payload: { n: i } })),
      );
    const enqueueWrites = s.meter.count(...WRITE_OPERATIONS);
    s.meter.reset();
    let done = 0;
    // One worker's drain: its claim memory (partitions found empty, spare heads) is kept between its rounds.
    const memory = new ClaimState();
    for (;;) {
      const { claimed } = await s.store.claim({ workerId: 'drainer', types: ['short'], max: 8 }, memory);
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
    console.info(
      `per short task: ${JSON.stringify(perTask)} (requests by operation: ${JSON.stringify(Object.fromEntries(s.meter.sent))})`,
    );
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

  it('each store write leaves the item its transition computes, so the transitions price every edge as the store pays it', async () => {
    const s = await createTestStore(server.endpoint, { backoffBaseMs: 1_000 }, { random: () => 0.5 });
    const { config, clock } = s;
    const read = async (id: string) =>
      (
        await s.doc.send(
          new GetCommand({ TableName: config.tableName, Key: taskKey(id), ConsistentRead: true }),
        )
      ).Item as TaskItem;
    const byTransition: Record<string, number> = {};
    /** Runs one store operation on the task and checks the item after it against the edge applied to the item before it (write ids aside). */
    const step = async <T>(
      id: string,
      name: string,
      act: () => Promise<T>,
      transition: (before: TaskItem, now: number) => edge.Transition,
    ): Promise<T> => {
      // The cost a write records (task-cost.ts) is bookkeeping the edges leave to the store: compared apart.
      const before = withoutCost(await read(id));
      const now = clock.now();
      const out = await act();
      const after = withoutCost(await read(id));
      const t = transition(before, now);
      const { writeId: _modelled, ...modelled } = edge.applyTransition(before, t);
      const { writeId: _stored, ...stored } = after;
      expect(stored, name).toEqual(modelled);
      expect(transitionCost(before, t), name).toEqual(writeCost(before, after));
      byTransition[name] = transitionCost(before, t).total;
      return out;
    };
    const claimOne = async (id: string, type: string): Promise<Lease> =>
      step(
        id,
        'claimed',
        async () => (await s.store.claim({ workerId: 'w', types: [type], max: 1 })).claimed[0]!.lease,
        (b, now) =>
          edge.claimed(
            { id, type, shard: b.shard, readySk: b.readySk! },
            'w',
            now,
            leaseExpiry(now, config),
            config,
          ),
      );
    const expire = () => clock.advance(config.leaseTimeoutMs + config.clockSkewMs + 1);

    // A lane task (priority 5) through claim, renewals, a retried failure, promotion, release, cancel, retry, recovery, success.
    const { task } = await s.store.enqueue({ type: 'walk', owner: 'o', payload: { n: 1 }, priority: 5 });
    const queued = await read(task.id);
    expect(queued).toMatchObject(edge.applyTransition({}, edge.enqueued(queued, task.createdAt)));
    byTransition.enqueued = writeCost(undefined, queued).total;
    let lease = await claimOne(task.id, 'walk');
    for (let i = 0; i < 5; i++) {
      clock.advance(config.heartbeatIntervalMs);
      const leaseUntil = leaseExpiry(clock.now(), config);
      const sweepAt = sweepKeyAfterRenewal(lease.sweepAt, leaseUntil, config);
      const [renewal] = await step(
        task.id,
        `renewed ${i + 1}`,
        () => s.store.renew({ leases: [lease] }),
        () => edge.renewed(lease, leaseUntil, sweepAt),
      );
      if (renewal?.outcome !== 'renewed') throw new Error(`renewal ${i + 1}: ${renewal?.outcome}`);
      lease = renewal.lease;
    }
    await step(
      task.id,
      'failedRetry',
      () => s.store.fail({ lease, error: 'boom' }),
      (_, now) => {
        const outcome = decideFailure(
          lease,
          now,
          true,
          { baseMs: config.backoffBaseMs, maxMs: config.backoffMaxMs },
          () => 0.5,
        );
        if (outcome.status !== 'QUEUED') throw new Error('expected a retry');
        return edge.failedRetry(lease, now, outcome.availableAt, storeError('boom').fields);
      },
    );
    clock.advance(config.backoffBaseMs);
    await step(
      task.id,
      'promoted',
      () => s.store.promote({ id: task.id }),
      (b, now) => edge.promoted(b.delayPk!, now),
    );
    lease = await claimOne(task.id, 'walk');
    await step(
      task.id,
      'released',
      () => s.store.release({ lease, progress: { fraction: 0.5, note: 'half' } }),
      (_, now) => edge.released(lease, now, { fraction: 0.5, note: 'half' }),
    );
    lease = await claimOne(task.id, 'walk');
    await step(
      task.id,
      'cancelRequested',
      () => s.store.requestCancel({ id: task.id }),
      (_, now) => edge.cancelRequested(now),
    );
    await step(
      task.id,
      'cancelledRunning',
      () => s.store.finishCancel({ lease }),
      (_, now) => edge.cancelledRunning(lease, now, config),
    );
    await step(
      task.id,
      'retried',
      () => s.store.retry({ id: task.id }),
      (b, now) => edge.retried(b, now),
    );
    lease = await claimOne(task.id, 'walk');
    expire();
    await step(
      task.id,
      'recoveredRequeue',
      () => s.store.recover(),
      (b, now) => edge.recoveredRequeue(b, now),
    );
    lease = await claimOne(task.id, 'walk');
    await step(
      task.id,
      'completed',
      () => s.store.complete({ lease, result: { ok: true } }),
      (_, now) =>
        edge.completed(lease, now, storeResult(JSON.stringify({ ok: true }), lease.token).fields, config),
    );

    // The other ways out: a queued task cancelled, a lease recovered on its last attempt, a cancel finished by recovery.
    const { task: queuedTask } = await s.store.enqueue({ type: 'cancelled', owner: 'o', delayMs: 60_000 });
    await step(
      queuedTask.id,
      'cancelledQueued',
      () => s.store.requestCancel({ id: queuedTask.id }),
      (_, now) => edge.cancelledQueued(now, config),
    );
    const { task: last } = await s.store.enqueue({ type: 'last', owner: 'o', maxAttempts: 1 });
    await claimOne(last.id, 'last');
    expire();
    await step(
      last.id,
      'recoveredFail',
      () => s.store.recover(),
      (b, now) => {
        const decision = decideRecovery(b, now, config);
        if (decision.action !== 'fail') throw new Error(`expected a failure, got ${decision.action}`);
        return edge.recoveredFail(b, now, decision.error, config);
      },
    );
    const { task: abandoned } = await s.store.enqueue({ type: 'abandoned', owner: 'o' });
    await claimOne(abandoned.id, 'abandoned');
    await step(
      abandoned.id,
      'cancelRequested (abandoned)',
      () => s.store.requestCancel({ id: abandoned.id }),
      (_, now) => edge.cancelRequested(now),
    );
    expire();
    await step(
      abandoned.id,
      'recoveredCancel',
      () => s.store.recover(),
      (b, now) => edge.recoveredCancel(b, now, config),
    );

    console.info(`write units by transition: ${JSON.stringify(byTransition)}`);
    expect(byTransition).toMatchObject({
      enqueued: 3,
      claimed: 3,
      completed: 2,
      failedRetry: 3,
      promoted: 3,
      released: 3,
      cancelRequested: 1,
      cancelledRunning: 2,
      retried: 2,
      recoveredRequeue: 3,
      cancelledQueued: 2,
      recoveredFail: 2,
      recoveredCancel: 2,
    });
    expect([1, 2, 3, 4, 5].map((i) => byTransition[`renewed ${i}`])).toEqual([1, 1, 1, 1, 3]);
  });
});

function withoutCost(item: TaskItem): TaskItem {
  const bare = { ...item } as Record<string, unknown>;
  for (const attribute of Object.values(COST_ATTRIBUTES)) delete bare[attribute];
  return bare as unknown as TaskItem;
}
