/**
 * The scheduled tick's idle check: from the queue summary recovery writes, a tick with nothing to do
 * returns at once (one read, whatever the number of types and shards); a tick with work, or without a
 * summary it can trust, runs as before.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { kickHorizonMs } from '../shared/fleet/fleet-rules.js';
import { runFleetInvocation } from '../shared/fleet/fleet-invocation.js';
import { FleetSeats } from '../shared/fleet/fleet-seats.js';
import { planIdleTick } from '../shared/fleet/idle-tick.js';
import { writeTargetOf } from '../shared/store/context.js';
import { readQueueSummary, writeQueueSummary, type QueueSummary } from '../shared/store/queue-summary.js';
import type { RunSummary } from '../shared/worker/worker.js';
import { fakeTimekeeper, runSummary, seededRandom } from './support/fleet-fakes.js';
import { RecordingMetrics } from '../shared/metrics.js';
import { runRecoverySweep } from '../shared/recovery/recovery-sweep.js';
import { silentLogger } from './support/worker-world.js';
import { startTestDynamo, type TestDynamo } from './support/test-dynamo.js';
import { createTestStore } from './support/test-store.js';
import { TUNING } from '../shared/tuning.js';

let server: TestDynamo;
beforeAll(async () => {
  server = await startTestDynamo();
});
afterAll(() => server.close());

const NOW = 1_800_000_000_000;
const RULES = { recoveryIntervalMs: 60_000, tickIntervalMs: 60_000 };
const quiet: QueueSummary = { writtenAt: NOW - 30_000, readyTypes: [], leased: 0 };

describe('planIdleTick (pure, fixed clock)', () => {
  it('returns at once only on a fresh summary that shows no ready work and nothing due before the next tick', () => {
    expect(planIdleTick(quiet, NOW, RULES)).toEqual({ run: false, because: 'nothing-to-do' });
    // Tasks running elsewhere are their workers' business.
    expect(planIdleTick({ ...quiet, leased: 40 }, NOW, RULES).run).toBe(false);
    expect(planIdleTick({ ...quiet, nextDueAt: NOW + 60_001 }, NOW, RULES).run).toBe(false);
  });

  it('runs when there is work, when a delayed task falls due before the next tick, or when the summary cannot be trusted', () => {
    expect(planIdleTick(undefined, NOW, RULES)).toEqual({ run: true, because: 'no-summary' });
    expect(planIdleTick({ ...quiet, writtenAt: NOW - 180_001 }, NOW, RULES)).toEqual({
      run: true,
      because: 'stale-summary',
    });
    expect(planIdleTick({ ...quiet, writtenAt: NOW - 180_000 }, NOW, RULES).run).toBe(false);
    expect(planIdleTick({ ...quiet, readyTypes: ['email.send'] }, NOW, RULES)).toEqual({
      run: true,
      because: 'ready-work',
    });
    const waiting = (oldestDueAt: number): QueueSummary => ({
      ...quiet,
      readyTypes: ['email.send'],
      types: [{ type: 'email.send', ready: 1, oldestDueAt, estimated: false }],
    });
    // Work its kick is still taking (younger than the grace when recovery read it) is left to the kick.
    expect(planIdleTick(waiting(quiet.writtenAt - TUNING.kick.workGraceMs + 1), NOW, RULES).run).toBe(false);
    expect(planIdleTick(waiting(quiet.writtenAt - TUNING.kick.workGraceMs), NOW, RULES).because).toBe(
      'ready-work',
    );
    expect(planIdleTick({ ...quiet, nextDueAt: NOW + 60_000 }, NOW, RULES)).toEqual({
      run: true,
      because: 'due-soon',
    });
    // Already due and not promoted (a timekeeper missed it): this tick keeps time.
    expect(planIdleTick({ ...quiet, nextDueAt: NOW - 5_000 }, NOW, RULES).because).toBe('due-soon');
  });
});

describe('kick horizon and idle tick together (pure)', () => {
  // A delayed task is either kicked for at its enqueue (which starts a timekeeper) or seen by a
  // scheduled tick at or before its due time: a tick that reads a summary written after the enqueue
  // and plans to keep time for it. Recovery writes the summary every interval and the tick comes every
  // minute, each at its own phase and with jitter; the task is enqueued at any instant.
  it('no delayed task falls between the kick and the tick, for any phases and recovery interval', () => {
    const TICK = 60_000;
    const JITTER = 5_000;
    fc.assert(
      fc.property(
        fc.integer({ min: 30_000, max: 120_000 }), // recovery interval
        fc.integer({ min: 0, max: 1_000_000 }), // recovery phase
        fc.integer({ min: 0, max: 1_000_000 }), // tick phase
        fc.integer({ min: 0, max: JITTER }), // each tick and sweep late by up to this
        fc.integer({ min: 0, max: 10_000_000 }), // enqueue instant
        fc.integer({ min: 1, max: 180_000 }), // delay beyond the kick horizon (nearest are the hardest)
        (interval, recoveryPhase, tickPhase, late, enqueuedAt, beyond) => {
          // Delays within the horizon are kicked for.
          const dueAt = enqueuedAt + kickHorizonMs(interval) + beyond;
          const rules = { recoveryIntervalMs: interval, tickIntervalMs: TICK };
          // The first summary written after the enqueue.
          const k = Math.ceil((enqueuedAt - recoveryPhase) / interval);
          const writtenAt = recoveryPhase + k * interval + late;
          // The last tick at or before the due time.
          const tickAt = tickPhase + Math.floor((dueAt - tickPhase) / TICK) * TICK;
          expect(writtenAt, 'a summary after the enqueue comes before that tick').toBeLessThanOrEqual(tickAt);
          const plan = planIdleTick(
            { writtenAt, readyTypes: [], leased: 0, nextDueAt: dueAt },
            tickAt + late,
            rules,
          );
          expect(plan.run).toBe(true);
        },
      ),
      { numRuns: 2_000 },
    );
  });
});

const ran: RunSummary = runSummary();

/** One scheduled tick through runFleetInvocation on the emulator: real seats, the summary read from the table. */
async function tickWorld() {
  const t = await createTestStore(server.endpoint);
  const seats = new FleetSeats({
    target: writeTargetOf(t.store.ctx),
    clock: t.clock,
    random: seededRandom(3),
    cap: 4,
  });
  const run = vi.fn(async () => ran);
  const tick = () =>
    runFleetInvocation(
      {
        worker: { run },
        seats,
        scaler: { settled: async () => undefined, refill: async () => false },
        invoker: { start: async () => true },
        timekeeper: fakeTimekeeper,
        pause: async () => undefined,
        clock: t.clock,
        logger: { warn: vi.fn(), info: vi.fn() },
        clockSkewMs: 5_000,
        idleCheck: async () => planIdleTick(await readQueueSummary(t.store.ctx), t.clock.now(), RULES),
      },
      'env-1/req-1',
      () => 60_000,
    );
  return { t, run, tick };
}

describe('the scheduled tick on the emulator', () => {
  it('with nothing to do: one GetItem, no seat taken, the worker never runs', async () => {
    const { t, run, tick } = await tickWorld();
    await writeQueueSummary(t.store.ctx, { writtenAt: t.clock.now(), readyTypes: [], leased: 0 });
    t.meter.reset();
    expect(await tick()).toEqual({ seat: undefined, stoppedBecause: 'nothing-to-do' });
    expect(Object.fromEntries(t.meter.sent)).toEqual({ GetItem: 1 });
    expect(run).not.toHaveBeenCalled();
  });

  it('with ready work in the summary, or with no summary at all, it takes a seat and runs', async () => {
    const { t, run, tick } = await tickWorld();
    expect(await tick()).toMatchObject({ seat: 0 });
    await writeQueueSummary(t.store.ctx, { writtenAt: t.clock.now(), readyTypes: ['x'], leased: 0 });
    expect(await tick()).toMatchObject({ seat: 0 });
    expect(run).toHaveBeenCalledTimes(2);
  });

  it('recovery writes the summary the tick reads: with 1, 3 or 10 idle types the tick is one read; a task enqueued without a kick makes the next tick run', async () => {
    for (const n of [1, 3, 10]) {
      const { t, run, tick } = await tickWorld();
      const types = Array.from({ length: n }, (_, i) => `type-${i}`);
      const sweep = () =>
        runRecoverySweep(
          t.store,
          { clock: t.clock, metrics: new RecordingMetrics(), logger: silentLogger() },
          types,
        );
      await sweep();
      t.meter.reset();
      expect(await tick()).toEqual({ seat: undefined, stoppedBecause: 'nothing-to-do' });
      expect([...t.meter.sent.values()].reduce((a, b) => a + b, 0)).toBe(1);
      // Work that arrived without a kick (a lost Invoke, say): the next sweep shows it, the next tick runs.
      await t.store.enqueue({ type: `type-${n - 1}`, owner: 'o' });
      t.clock.advance(60_000);
      await sweep();
      expect(await readQueueSummary(t.store.ctx)).toMatchObject({ readyTypes: [`type-${n - 1}`] });
      expect(await tick()).toMatchObject({ seat: 0 });
      expect(run).toHaveBeenCalledTimes(1);
    }
  });
});
