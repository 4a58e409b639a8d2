/**
 * Claiming due delayed tasks straight from their delay partition (claim.ts step 1b): a worker offered
 * the entries of a burst takes them without the promotion write and without reading the ready index,
 * and only what its conditions allow; everything else is left to the promotion. On the emulator;
 * the last test through a Worker (the run stays up for what it was offered).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClaimState } from '../shared/store/claim-state.js';
import {
  DEFAULT_PRIORITY,
  delaySweepPartition,
  leaseSweepPartition,
  shardForId,
} from '../shared/table-layout.js';
import { startTestDynamo, type TestDynamo } from './support/test-dynamo.js';
import { createTestStore, type TestStore } from './support/test-store.js';
import { dropNextAnswer } from './support/lost-answer.js';
import { seededRandom } from './support/fleet-fakes.js';
import { createWorkerWorld, FAST_LEASES, LOAD_TOLERANT_LEASES } from './support/worker-world.js';
import { localSync } from '../shared/schedules/scheduler-sync.js';
import * as z from 'zod';
import { defineTask } from '../shared/tasks/define.js';

let server: TestDynamo;
beforeAll(async () => {
  server = await startTestDynamo();
});
afterAll(() => server.close());

const DELAY = 10_000;

/** `n` tasks of `type` due DELAY from now, and the entries a worker is offered for them. */
async function delayedBurst(t: TestStore, n: number, type = 'burst', extra: { priority?: number } = {}) {
  const tasks = await Promise.all(
    Array.from({ length: n }, (_, i) =>
      t.store.enqueue({ type, owner: 'o', payload: { i }, delayMs: DELAY, ...extra }),
    ),
  );
  return tasks.map(({ task }) => ({ id: task.id, dueAt: task.availableAt }));
}

const item = async (t: TestStore, id: string) => (await t.scanAll()).find((i) => i.id === id)!;

describe('claim of due delayed tasks offered to a worker', () => {
  it('takes them once due, straight from the delay partition: RUNNING under a fresh token, no promotion, no ready read', async () => {
    const t = await createTestStore(server.endpoint);
    const entries = await delayedBurst(t, 6);
    const memory = new ClaimState();
    memory.offerDue(entries, seededRandom(1));
    // Not due yet: nothing is written, the entries stay offered.
    t.meter.reset();
    const early = await t.store.claim({ workerId: 'w1', types: ['burst'], max: 8 }, memory);
    expect(early.claimed).toEqual([]);
    expect(t.meter.count('UpdateItem')).toBe(0);
    expect(memory.dueWaiting).toBe(6);

    t.clock.advance(DELAY);
    t.meter.reset();
    const round = await t.store.claim({ workerId: 'w1', types: ['burst'], max: 6 }, memory);
    expect(round.claimed.map((c) => c.task.id).sort()).toEqual(entries.map((e) => e.id).sort());
    expect(round.lostRaces).toBe(0);
    // One write per task, and no shard read: the worker knew where its work was (and had room for no
    // more). The one query is the type's lane above the default priority, read first as always.
    expect(t.meter.count('UpdateItem')).toBe(6);
    expect(t.meter.count('Query')).toBeLessThanOrEqual(1);
    for (const { id } of entries) {
      const stored = await item(t, id);
      expect(stored).toMatchObject({
        status: 'RUNNING',
        leaseOwner: 'w1',
        leaseToken: 1,
        attempts: 1,
        sweepPk: leaseSweepPartition(shardForId(id)),
      });
      expect(stored.readyPk).toBeUndefined();
      expect(stored.delayPk).toBeUndefined();
      expect(stored.dueReadyPk).toBeUndefined();
    }
    expect(memory.dueWaiting).toBe(0);
    // The lease is the usual one: the holder completes under it.
    await t.store.complete({ lease: round.claimed[0]!.lease });
    expect(await item(t, round.claimed[0]!.task.id)).toMatchObject({ status: 'SUCCESS' });
  });

  it('leaves to the promotion what it must not take: another priority, a type it does not serve, a limited type, a cancelled task', async () => {
    const t = await createTestStore(server.endpoint, { typeConcurrency: 'limited=2' });
    const [high] = await delayedBurst(t, 1, 'burst', { priority: 5 });
    const [low] = await delayedBurst(t, 1, 'burst', { priority: -5 });
    const [other] = await delayedBurst(t, 1, 'other');
    const [limited] = await delayedBurst(t, 1, 'limited');
    const [cancelled] = await delayedBurst(t, 1, 'burst');
    await t.store.requestCancel({ id: cancelled!.id, owner: 'o' });
    t.clock.advance(DELAY);
    const memory = new ClaimState();
    memory.offerDue([high!, low!, other!, limited!, cancelled!], seededRandom(2));
    const round = await t.store.claim({ workerId: 'w1', types: ['burst', 'limited'], max: 8 }, memory);
    expect(round.claimed.map((c) => c.task.id)).not.toContain(high!.id);
    expect(round.claimed.map((c) => c.task.id)).not.toContain(low!.id);
    expect(round.claimed.map((c) => c.task.id)).not.toContain(other!.id);
    expect(round.claimed.map((c) => c.task.id)).not.toContain(limited!.id);
    for (const { id } of [high!, low!, other!, limited!]) {
      const stored = await item(t, id);
      expect(stored).toMatchObject({
        status: 'QUEUED',
        delayPk: delaySweepPartition(shardForId(id)),
        attempts: 0,
      });
    }
    expect(await item(t, cancelled!.id)).toMatchObject({ status: 'CANCELLED' });
    // The promotion still moves each of them to the ready index, where the usual claim order applies.
    for (const { id } of [high!, low!, other!, limited!]) expect(await t.store.promote({ id })).toBe(true);
    const next = await t.store.claim(
      { workerId: 'w2', types: ['burst', 'limited', 'other'], max: 8 },
      new ClaimState(),
    );
    expect(next.claimed.map((c) => c.task.priority)).toEqual(
      expect.arrayContaining([5, -5, DEFAULT_PRIORITY, DEFAULT_PRIORITY]),
    );
    expect(next.claimed[0]!.task.id).toBe(high!.id);
  });

  it('four workers offered the same 120 entries: each task claimed exactly once, every one of them', async () => {
    const t = await createTestStore(server.endpoint);
    const entries = await delayedBurst(t, 120);
    t.clock.advance(DELAY);
    const workers = Array.from({ length: 4 }, (_, w) => ({
      id: `w${w}`,
      store: t.peer({ random: seededRandom(10 + w) }),
      memory: new ClaimState(),
    }));
    for (const [w, worker] of workers.entries()) worker.memory.offerDue(entries, seededRandom(100 + w));
    const holders = new Map<string, string[]>();
    let lost = 0;
    await Promise.all(
      workers.map(async (worker) => {
        while (worker.memory.dueWaiting > 0) {
          const round = await worker.store.claim(
            { workerId: worker.id, types: ['burst'], max: 8 },
            worker.memory,
          );
          lost += round.lostRaces;
          for (const c of round.claimed)
            holders.set(c.task.id, [...(holders.get(c.task.id) ?? []), worker.id]);
        }
      }),
    );
    // Lists a worker gave up on (another took all it tried there) were finished by the others.
    const stored = (await t.scanAll()).filter((i) => i.type === 'burst');
    const running = stored.filter((i) => i.status === 'RUNNING');
    expect([...holders.values()].every((h) => h.length === 1)).toBe(true);
    expect(running.map((i) => i.id).sort()).toEqual([...holders.keys()].sort());
    expect(running.every((i) => i.leaseToken === 1 && i.attempts === 1)).toBe(true);
    const left = stored.filter((i) => i.status === 'QUEUED');
    expect(running.length + left.length).toBe(120);
    // A worker leaves a shard after one failed write there: at most one lost race per worker and shard.
    expect(lost).toBeLessThanOrEqual(4 * 16);
    console.info(
      `4 workers, 120 offered entries: ${running.length} claimed directly, ${left.length} left, ${lost} lost races`,
    );
    expect(running.length).toBeGreaterThan(100);
  });

  it('a claim whose answer was lost is read back: the task counts as won, not as a lost race', async () => {
    const t = await createTestStore(server.endpoint);
    const [entry] = await delayedBurst(t, 1);
    t.clock.advance(DELAY);
    const drop = dropNextAnswer(t.client, 'UpdateItem');
    const memory = new ClaimState();
    memory.offerDue([entry!], seededRandom(3));
    const round = await t.store.claim({ workerId: 'w1', types: ['burst'], max: 8 }, memory);
    expect(drop.dropped).toBe(1);
    expect(round.claimed.map((c) => c.task.id)).toEqual([entry!.id]);
    expect(round.lostRaces).toBe(0);
    expect(await item(t, entry!.id)).toMatchObject({ status: 'RUNNING', leaseToken: 1, attempts: 1 });
  });

  it('while offered entries wait, a round reads no ready shard; once the list is done it does', async () => {
    const t = await createTestStore(server.endpoint);
    const entries = await delayedBurst(t, 2);
    const { task: ready } = await t.store.enqueue({ type: 'burst', owner: 'o', payload: {} });
    const memory = new ClaimState();
    memory.offerDue(entries, seededRandom(4));
    t.meter.reset();
    const before = await t.store.claim({ workerId: 'w1', types: ['burst'], max: 8 }, memory);
    expect(before.claimed).toEqual([]);
    // At most the type's lane above the default priority (read first, as always), not its 16 shards.
    expect(t.meter.count('Query')).toBeLessThanOrEqual(1);
    t.clock.advance(DELAY);
    // Once due: the offered entries first, then (the list done, room left) the ready partitions.
    const due = await t.store.claim({ workerId: 'w1', types: ['burst'], max: 8 }, memory);
    expect(due.claimed.map((c) => c.task.id).sort()).toEqual([...entries.map((e) => e.id), ready.id].sort());
    expect(memory.dueWaiting).toBe(0);
  });
});

/**
 * A worker world serving type 'burst', with `n` tasks of it all due at one instant (as a burst is: a
 * cron tick or a runAt), `delayMs` from the world's now once they are enqueued, and their entries.
 * One instant, not `delayMs` per enqueue: enqueues spread over a loaded machine would spread the due
 * times, and a refill at the moment the offered share is taken would find the rest not due yet. And
 * the instant is a minute ahead while they are written, the world's clock set `delayMs` before it only
 * then: on a loaded machine the enqueues alone have taken longer than `delayMs`.
 */
async function workerBurst(n: number, delayMs: number) {
  let offset = 0;
  // Deadlines a loaded machine keeps: a burst read that timed out would end the burst for the run
  // (worker.ts refill), which would then read the ready shards.
  const w = await createWorkerWorld(
    server.endpoint,
    [defineTask({ name: 'burst', schema: z.unknown(), handler: () => 'ok' })],
    LOAD_TOLERANT_LEASES,
    localSync,
    { clock: { now: () => Date.now() + offset } },
  );
  const availableAt = Date.now() + 60_000;
  const tasks = await Promise.all(
    Array.from({ length: n }, (_, i) =>
      w.store.enqueue({ type: 'burst', owner: 'o', payload: { i }, availableAt }),
    ),
  );
  offset = availableAt - delayMs - Date.now();
  return { w, entries: tasks.map(({ task }) => ({ id: task.id, dueAt: task.availableAt })) };
}

describe('Worker.offerDue (real TaskStore on the emulator, real timers)', () => {
  it('an offered burst keeps an otherwise idle run up until it is due, and the run claims it straight from the delay partition', async () => {
    const { w, entries } = await workerBurst(20, 3 * (FAST_LEASES.idleStopMs as number));
    const worker = w.worker('w1', { store: w.store });
    let promoted = 0;
    w.store.events.on('task:promoted', () => promoted++);
    worker.offerDue(entries);
    const summary = await worker.run({ remainingTimeMs: () => 60_000 });
    // Without the offer the run would have stopped idle long before the tasks were due.
    expect(summary.stoppedBecause).toBe('idle');
    expect(summary.claimed).toBe(20);
    expect(promoted).toBe(0);
    const stored = (await w.scanAll()).filter((i) => i.type === 'burst');
    expect(stored.every((i) => i.status === 'SUCCESS' && i.leaseToken === 1)).toBe(true);
    // Every start came at or after its due time.
    expect(stored.every((i) => (i.startedAt as number) >= (i.availableAt as number))).toBe(true);
  });

  it('a run that took its share reads the delay partitions again and steals the rest, reading no ready shard meanwhile', async () => {
    const { w, entries } = await workerBurst(40, 2 * (FAST_LEASES.idleStopMs as number));
    // Which partitions the run queries, and when.
    const queried: { at: number; partition: string }[] = [];
    w.client.middlewareStack.add(
      (next) => async (args) => {
        const input = args.input as {
          IndexName?: string;
          ExpressionAttributeValues?: Record<string, unknown>;
        };
        if (input.IndexName !== undefined)
          queried.push({
            at: w.storeClock.now(),
            partition: String(input.ExpressionAttributeValues?.[':p']),
          });
        return next(args);
      },
      { step: 'initialize', name: 'testQueryLog' },
    );
    const refills: number[] = [];
    const worker = w.worker('w1', {
      store: w.store,
      refillDue: async (now) => {
        refills.push(now);
        return w.store.dueDelayed({ before: now, limit: 5_000 });
      },
    });
    let promoted = 0;
    w.store.events.on('task:promoted', () => promoted++);
    // Offered a fifth of the burst (the rest was in shards another worker took).
    worker.offerDue(entries.slice(0, 8));
    const summary = await worker.run({ remainingTimeMs: () => 60_000 });
    expect(summary.claimed).toBe(40);
    expect(promoted).toBe(0);
    const stored = (await w.scanAll()).filter((i) => i.type === 'burst');
    expect(stored.every((i) => i.status === 'SUCCESS' && i.leaseToken === 1)).toBe(true);
    const lastStart = Math.max(...stored.map((i) => i.startedAt as number));
    // It read the delay partitions again (the last read found nothing due: the burst was over)...
    expect(refills.length).toBeGreaterThanOrEqual(2);
    expect(queried.some((q) => q.partition.startsWith('DELAY#') && q.at <= lastStart)).toBe(true);
    // ...and no ready shard of the type until every task of the burst had started.
    const readyShardReads = queried.filter((q) => /^burst#\d+$/.test(q.partition) && q.at <= lastStart);
    expect(readyShardReads).toEqual([]);
  });
});
