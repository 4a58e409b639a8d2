/**
 * The timekeeper, each process's one owner of promotion: delayed tasks are promoted within a few
 * milliseconds of their due time, by one timer for the earliest, on what each refresh of the delay
 * partitions found and what it was told of (a retry its worker scheduled). First on an
 * in-memory store and fake timers (exact instants), then on dynalite with real timers (1,000 tasks
 * falling due at once), and the delay-partition read itself on dynalite.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { systemClock } from '../shared/clock.js';
import { LeaseEvents } from '../shared/events.js';
import { Timekeeper, type TimekeeperDeps, type TimekeeperReads } from '../shared/worker/timekeeper.js';
import { kickHorizonMs } from '../shared/fleet/fleet-rules.js';

/** The horizon with the default recovery interval (a minute). */
const KICK_HORIZON_MS = kickHorizonMs(60_000);
import { ClaimState } from '../shared/store/claim-state.js';
import { shardForId } from '../shared/table-layout.js';
import { TimerSet } from '../shared/worker/timers.js';
import { deferred } from './support/fleet-fakes.js';
import { advance, START, useFakeTime } from './support/fake-time.js';
import { startTestDynamo, type TestDynamo } from './support/test-dynamo.js';
import { createTestStore } from './support/test-store.js';
import { seedEnqueued } from './support/timekeeper-seed.js';
import { FakeTimekeepingStore } from './support/timekeeper-store.js';
import { TUNING } from '../shared/tuning.js';

/** How late past its due time a promotion may land on fake timers (the timer aims 2 ms past it). */
const LATE_MS = 5;

describe('Timekeeper (in-memory store, fake timers)', () => {
  useFakeTime();

  function keeper(
    options: Partial<Pick<TimekeeperDeps, 'onBurstAhead' | 'offerDue'> & Omit<TimekeeperReads, 'store'>> = {},
  ) {
    const clock = systemClock();
    const store = new FakeTimekeepingStore(clock);
    const timers = new TimerSet();
    const logger = { warn: vi.fn() };
    const timekeeper = new Timekeeper({
      store,
      clock,
      timers,
      logger,
      reads: {
        store,
        refreshMs: options.refreshMs ?? TUNING.timekeeper.minRefreshMs,
        horizonMs: options.horizonMs ?? KICK_HORIZON_MS,
      },
      ...(options.onBurstAhead ? { onBurstAhead: options.onBurstAhead } : {}),
      ...(options.offerDue ? { offerDue: options.offerDue } : {}),
    });
    return { store, timers, logger, timekeeper };
  }

  it('promotes a task due in 5 s at 5 s (within a few ms), not before, and only once', async () => {
    const k = keeper();
    k.store.delay('a', START + 5_000);
    k.timekeeper.start();
    await advance(4_999);
    expect(k.store.promoteCalls).toEqual([]);
    expect(k.store.state('a')).toBe('delayed');
    await advance(LATE_MS + 1);
    expect(k.store.promotions).toHaveLength(1);
    const { at } = k.store.promotions[0]!;
    expect(at - (START + 5_000)).toBeGreaterThanOrEqual(0);
    expect(at - (START + 5_000)).toBeLessThanOrEqual(LATE_MS);
    expect(k.timekeeper.promoted).toBe(1);
    // A second later: no second promotion, no repeated write (later refreshes no longer see it).
    await advance(1_000);
    expect(k.store.promoteCalls.map((c) => c.id)).toEqual(['a']);
    expect(k.timekeeper.promoted).toBe(1);
    await k.timekeeper.stop();
  });

  it('three tasks due at the same instant: one timer, all three promoted at that instant', async () => {
    const k = keeper();
    for (const id of ['a', 'b', 'c']) k.store.delay(id, START + 3_000);
    const timeout = vi.spyOn(k.timers, 'timeout');
    k.timekeeper.start();
    await advance(0);
    // The refresh interval and one due timer.
    expect(k.timers.armed).toBe(2);
    expect(timeout).toHaveBeenCalledTimes(1);
    await advance(3_000 + LATE_MS);
    expect(timeout).toHaveBeenCalledTimes(1); // later refreshes did not arm another for the same instant
    expect(k.store.promotions.map((p) => p.id).sort()).toEqual(['a', 'b', 'c']);
    expect(new Set(k.store.promotions.map((p) => p.at)).size).toBe(1);
    expect(k.store.promotions[0]!.at - (START + 3_000)).toBeLessThanOrEqual(LATE_MS);
    expect(k.timekeeper.promoted).toBe(3);
    expect(k.timers.armed).toBe(1); // only the refresh interval: nothing else is due
    await k.timekeeper.stop();
  });

  it('a task delayed after start is found by the next refresh and promoted at its due time', async () => {
    const k = keeper();
    k.timekeeper.start();
    await advance(400);
    k.store.delay('late', START + 3_000);
    expect(k.timekeeper.nextDueAt).toBeUndefined(); // not read yet
    await advance(TUNING.timekeeper.minRefreshMs - 400);
    expect(k.store.reads).toHaveLength(2);
    expect(k.timekeeper.nextDueAt).toBe(START + 3_000);
    await advance(2_000 - 1);
    expect(k.store.promotions).toEqual([]);
    await advance(LATE_MS + 1);
    expect(k.store.promotions).toEqual([{ id: 'late', at: expect.any(Number) }]);
    expect(k.store.promotions[0]!.at - (START + 3_000)).toBeLessThanOrEqual(LATE_MS);
    // One delayed for less than the refresh, just after a read: promoted by the next read (at most a refresh late).
    await advance(100);
    const now = Date.now();
    k.store.delay('short', now + 200);
    await advance(TUNING.timekeeper.minRefreshMs);
    expect(k.store.promotions.map((p) => p.id)).toEqual(['late', 'short']);
    expect(k.store.promotions[1]!.at - (now + 200)).toBeLessThanOrEqual(TUNING.timekeeper.minRefreshMs);
    await k.timekeeper.stop();
  });

  it('dueAfterRelease (after stop): reads whether anything falls due within the horizon, one entry', async () => {
    const k = keeper();
    k.timekeeper.start();
    await advance(0);
    await k.timekeeper.stop();
    // Delayed after its last read: only a read after stop can know.
    expect(await k.timekeeper.dueAfterRelease()).toBe(false);
    k.store.delay('beyond', START + KICK_HORIZON_MS + 60_000);
    expect(await k.timekeeper.dueAfterRelease()).toBe(false);
    k.store.delay('soon', START + 8_000);
    expect(await k.timekeeper.dueAfterRelease()).toBe(true);
    expect(k.timekeeper.nextDueAt).toBeUndefined(); // it reads, it arms nothing
    expect(k.store.promotions).toEqual([]);
  });

  it('dueAfterRelease does not count a task it just promoted that a lagging read still lists', async () => {
    const k = keeper();
    k.store.delay('promoted', START + 1_000);
    k.timekeeper.start();
    await advance(1_000 + LATE_MS);
    expect(k.store.promotions.map((p) => p.id)).toEqual(['promoted']);
    await k.timekeeper.stop();
    // A read sent within TUNING.timekeeper.indexLagMs of the promotion may still list it as delayed.
    k.store.delay('promoted', START + 1_000);
    expect(await k.timekeeper.dueAfterRelease()).toBe(false);
    // Another task due soon is not hidden behind it.
    k.store.delay('other', START + 9_000);
    expect(await k.timekeeper.dueAfterRelease()).toBe(true);
  });

  it('a task already overdue at the first read is promoted at once', async () => {
    const k = keeper();
    k.store.delay('overdue', START - 10_000);
    k.timekeeper.start();
    await advance(LATE_MS);
    expect(k.store.promotions).toEqual([{ id: 'overdue', at: expect.any(Number) }]);
    expect(k.store.promotions[0]!.at - START).toBeLessThanOrEqual(LATE_MS);
    await k.timekeeper.stop();
  });

  it('nextDueAt and dueWithin report what it knows: the earliest due time within the horizon', async () => {
    const k = keeper({ horizonMs: 60_000 });
    expect(k.timekeeper.nextDueAt).toBeUndefined();
    expect(k.timekeeper.dueWithin(Number.POSITIVE_INFINITY)).toBe(false);
    k.store.delay('soon', START + 5_000);
    k.store.delay('later', START + 30_000);
    k.store.delay('beyond', START + 120_000); // past the horizon: not read yet
    k.timekeeper.start();
    await advance(0);
    expect(k.store.reads[0]).toMatchObject({ at: START, before: START + 60_000 });
    expect(k.timekeeper.nextDueAt).toBe(START + 5_000);
    expect(k.timekeeper.dueWithin(4_999)).toBe(false);
    expect(k.timekeeper.dueWithin(5_000)).toBe(true);
    await advance(5_000 + LATE_MS);
    expect(k.timekeeper.nextDueAt).toBe(START + 30_000);
    expect(k.timekeeper.dueWithin(25_000)).toBe(true);
    expect(k.timekeeper.dueWithin(24_000)).toBe(false);
    await advance(25_000);
    // 'later' promoted; 'beyond' came within the horizon at the refresh at 60 s, not before.
    expect(k.store.promotions.map((p) => p.id)).toEqual(['soon', 'later']);
    expect(k.timekeeper.nextDueAt).toBeUndefined();
    await advance(30_000);
    expect(k.timekeeper.nextDueAt).toBe(START + 120_000);
    await k.timekeeper.stop();
  });

  it('the default horizon is the kick horizon', async () => {
    const k = keeper();
    k.timekeeper.start();
    await advance(0);
    expect(k.store.reads).toEqual([
      { at: START, before: START + KICK_HORIZON_MS, limit: expect.any(Number) },
    ]);
    await k.timekeeper.stop();
  });

  it('stop() clears its timers and nothing is promoted or read after it', async () => {
    const k = keeper();
    k.store.delay('a', START + 5_000);
    k.timekeeper.start();
    await advance(1_000);
    expect(k.timers.armed).toBe(2);
    await k.timekeeper.stop();
    expect(k.timers.armed).toBe(0);
    const reads = k.store.reads.length;
    await advance(10_000);
    expect(k.store.promoteCalls).toEqual([]);
    expect(k.store.reads).toHaveLength(reads);
    expect(k.store.state('a')).toBe('delayed');
  });

  it('stop() during a read waits for it, and the late answer arms nothing', async () => {
    const k = keeper();
    k.store.delay('a', START + 5_000);
    const slow = deferred();
    k.store.readGate = slow.promise;
    k.timekeeper.start();
    await advance(0);
    let stopped = false;
    const stopping = k.timekeeper.stop().then(() => (stopped = true));
    await advance(0);
    expect(stopped).toBe(false); // the read is still in flight
    slow.resolve();
    await stopping;
    expect(k.timers.armed).toBe(0);
    expect(k.timekeeper.nextDueAt).toBeUndefined();
    await advance(10_000);
    expect(k.store.promoteCalls).toEqual([]);
  });

  /** 200 tasks due at 1 s, the timekeeper at that instant with its promotions held (the writes in flight). */
  async function burstHeldAtItsInstant() {
    const k = keeper();
    for (let i = 0; i < 200; i++) k.store.delay(`t${i}`, START + 1_000);
    const gate = deferred();
    k.store.promoteGate = gate.promise;
    k.timekeeper.start();
    await advance(1_000 + LATE_MS);
    return { k, gate };
  }

  it('stop() during a burst of promotions lets the ones in flight finish and starts no more', async () => {
    const { k, gate } = await burstHeldAtItsInstant();
    // 64 at a time.
    expect(k.store.inFlight).toBe(64);
    const stopping = k.timekeeper.stop();
    gate.resolve();
    await stopping;
    expect(k.store.promoteCalls).toHaveLength(64);
    expect(k.timekeeper.promoted).toBe(64);
    expect(k.timers.armed).toBe(0);
    // The 136 it never sent are still due: nextDueAt names them, so the invocation hands over.
    expect(k.timekeeper.nextDueAt).toBe(START + 1_000);
    await advance(5_000);
    expect(k.store.promoteCalls).toHaveLength(64);
  });

  it('promotes a burst 64 at a time, and all of it', async () => {
    const { k, gate } = await burstHeldAtItsInstant();
    expect(k.store.inFlight).toBe(64);
    gate.resolve();
    await advance(0);
    expect(k.store.maxInFlight).toBe(64);
    expect(k.timekeeper.promoted).toBe(200);
    expect(k.store.promoteCalls).toHaveLength(200);
    await k.timekeeper.stop();
  });

  // A refresh while a burst is still being written reads the same ids (still delayed): they must not
  // be queued again (before the fix, on dynalite: 6,433 promote calls and 768 in flight for 1,000 tasks).
  it('a refresh during a burst of promotions neither promotes a task twice nor exceeds 64 in flight', async () => {
    const { k, gate } = await burstHeldAtItsInstant();
    expect(k.store.inFlight).toBe(64);
    await advance(TUNING.timekeeper.minRefreshMs); // a refresh while the burst is still being written
    expect(k.store.maxInFlight).toBeLessThanOrEqual(64);
    gate.resolve();
    await advance(0);
    expect(k.timekeeper.promoted).toBe(200);
    expect(k.store.promoteCalls).toHaveLength(200);
    await k.timekeeper.stop();
  });

  it('a read that still lists promoted tasks (sent before the writes applied, or a lagging index) promotes none twice; one released to its old due time, and a retry delayed anew, are promoted again', async () => {
    const { k, gate } = await burstHeldAtItsInstant();
    const slowRead = deferred();
    k.store.readGate = slowRead.promise;
    k.store.answerAsOfSend = true;
    await advance(TUNING.timekeeper.minRefreshMs); // a refresh is sent while the burst is still being written...
    gate.resolve();
    await advance(0);
    expect(k.timekeeper.promoted).toBe(200);
    slowRead.resolve(); // ...and answers after every promotion applied, listing all 200 as delayed
    await advance(0);
    k.store.readGate = undefined;
    await advance(3 * TUNING.timekeeper.minRefreshMs);
    expect(k.store.promoteCalls).toHaveLength(200);
    expect(k.timekeeper.nextDueAt).toBeUndefined();
    // One was released by a worker whose clock is behind: filed again at its old due time. A read sent
    // TUNING.timekeeper.indexLagMs after the promotion is believed, and it is promoted again.
    const releasedAt = Date.now();
    k.store.delay('t3', START + 1_000);
    await advance(TUNING.timekeeper.indexLagMs + TUNING.timekeeper.minRefreshMs);
    const t3 = k.store.promoteCalls.filter((c) => c.id === 't3');
    expect(t3).toHaveLength(2);
    expect(t3[1]!.at - releasedAt).toBeLessThanOrEqual(
      TUNING.timekeeper.indexLagMs + TUNING.timekeeper.minRefreshMs,
    );
    expect(k.store.state('t3')).toBe('queued');
    // One of them failed and waits for its retry: the same id, another due time, promoted then.
    const retryAt = START + 10_000;
    k.store.delay('t7', retryAt);
    await advance(retryAt - Date.now() + LATE_MS);
    const t7 = k.store.promoteCalls.filter((c) => c.id === 't7');
    expect(t7).toHaveLength(2);
    expect(t7[1]!.at - retryAt).toBeGreaterThanOrEqual(0);
    expect(t7[1]!.at - retryAt).toBeLessThanOrEqual(LATE_MS);
    expect(k.store.state('t7')).toBe('queued');
    await k.timekeeper.stop();
  });

  it('a burst is offered to the workers at its instant, not promoted; what they take is never promoted; once they stop taking, the rest is', async () => {
    const offered: { id: string; dueAt: number }[][] = [];
    const ahead: [number, number][] = [];
    const k = keeper({
      onBurstAhead: (at, count) => ahead.push([at, count]),
      offerDue: (entries) => offered.push(entries),
    });
    const at = START + 10_000;
    const ids = Array.from({ length: 100 }, (_, i) => `b${i}`);
    for (const id of ids) k.store.delay(id, at);
    k.store.delay('lone', START + 20_000); // not a burst: promoted at its time as always
    k.timekeeper.start();
    await advance(10_000 - TUNING.burst.prewarmLeadMs);
    expect(ahead).toEqual([[at, 100]]);
    expect(100).toBeGreaterThanOrEqual(TUNING.burst.minTasks);
    await advance(TUNING.burst.prewarmLeadMs + LATE_MS);
    expect(offered).toHaveLength(1);
    expect(offered[0]!.map((e) => e.id).sort()).toEqual([...ids].sort());
    expect(offered[0]!.every((e) => e.dueAt === at)).toBe(true);
    expect(k.store.promoteCalls).toEqual([]);
    // Still its work until the workers are done: a hand-over now would carry it.
    expect(k.timekeeper.nextDueAt).toBe(at);
    // The workers take 60 in the first second, 30 in the next: left to them.
    for (const id of ids.slice(0, 60)) k.store.claimDirectly(id);
    await advance(TUNING.burst.graceMs);
    for (const id of ids.slice(60, 90)) k.store.claimDirectly(id);
    await advance(TUNING.burst.graceMs);
    expect(k.store.promoteCalls).toEqual([]);
    // Then they stop (gone, or full): the next look promotes exactly the 10 they left.
    await advance(TUNING.burst.graceMs);
    expect(k.store.promoteCalls.map((c) => c.id).sort()).toEqual(ids.slice(90).sort());
    expect(ids.slice(90).every((id) => k.store.state(id) === 'queued')).toBe(true);
    expect(k.timekeeper.nextDueAt).toBe(START + 20_000);
    await advance(20_000 - 10_000 - 3 * TUNING.burst.graceMs);
    expect(k.store.promoteCalls.map((c) => c.id)).toContain('lone');
    expect(offered).toHaveLength(1);
    await k.timekeeper.stop();
  });

  it('stopped while a burst is left to the workers: no promotion after, and nextDueAt still names it (the hand-over)', async () => {
    const k = keeper({ onBurstAhead: () => undefined, offerDue: () => undefined });
    const at = START + 6_000;
    for (let i = 0; i < 80; i++) k.store.delay(`s${i}`, at);
    k.timekeeper.start();
    await advance(6_000 + LATE_MS);
    await k.timekeeper.stop();
    expect(k.timers.armed).toBe(0);
    await advance(5 * TUNING.burst.graceMs);
    expect(k.store.promoteCalls).toEqual([]);
    expect(k.timekeeper.nextDueAt).toBe(at);
  });

  it('a failing read warns, and the next refresh recovers', async () => {
    const k = keeper();
    k.store.delay('a', START + 3_000);
    k.store.readFault = new Error('ProvisionedThroughputExceeded');
    k.timekeeper.start();
    await advance(0);
    expect(k.logger.warn).toHaveBeenCalledTimes(1);
    expect(k.logger.warn.mock.calls[0]![1]).toMatchObject({
      error: expect.stringContaining('ProvisionedThroughputExceeded'),
    });
    expect(k.timekeeper.nextDueAt).toBeUndefined();
    k.store.readFault = undefined;
    await advance(TUNING.timekeeper.minRefreshMs);
    expect(k.timekeeper.nextDueAt).toBe(START + 3_000);
    await advance(2_000 + LATE_MS);
    expect(k.store.promotions).toEqual([{ id: 'a', at: expect.any(Number) }]);
    expect(k.store.promotions[0]!.at - (START + 3_000)).toBeLessThanOrEqual(LATE_MS);
    expect(k.logger.warn).toHaveBeenCalledTimes(1);
    await k.timekeeper.stop();
  });

  it('a refreshMs below TUNING.timekeeper.minRefreshMs is raised to it', async () => {
    const k = keeper({ refreshMs: 20 });
    k.timekeeper.start();
    await advance(3_000);
    // The read at start, then one per TUNING.timekeeper.minRefreshMs (at 20 ms it would be 151).
    expect(k.store.reads).toHaveLength(1 + Math.floor(3_000 / TUNING.timekeeper.minRefreshMs));
    await k.timekeeper.stop();
    // And a longer one is kept.
    const slower = keeper({ refreshMs: 1_500 });
    slower.timekeeper.start();
    await advance(3_000);
    expect(slower.store.reads).toHaveLength(3);
    await slower.timekeeper.stop();
  });
});

describe('Timekeeper reads without a horizon given', () => {
  useFakeTime();

  it('looks two reads ahead plus the index lag, reading at most once a TUNING.timekeeper.minRefreshMs', async () => {
    const clock = systemClock();
    const store = new FakeTimekeepingStore(clock);
    const timers = new TimerSet();
    const timekeeper = new Timekeeper({
      store,
      clock,
      timers,
      logger: { warn: vi.fn() },
      reads: { store, refreshMs: 50 },
    });
    timekeeper.start();
    await advance(0);
    const refresh = TUNING.timekeeper.minRefreshMs;
    expect(store.reads[0]).toMatchObject({ before: START + 2 * refresh + TUNING.timekeeper.indexLagMs });
    await advance(refresh);
    expect(store.reads).toHaveLength(2);
    await timekeeper.stop();
  });
});

describe('Timekeeper told of retries, without reads (in-memory store, fake timers)', () => {
  useFakeTime();

  function toldOnly() {
    const clock = systemClock();
    const store = new FakeTimekeepingStore(clock);
    const timers = new TimerSet();
    const promotedEvents: string[] = [];
    const events = new LeaseEvents();
    events.on('task:promoted', (e) => void promotedEvents.push(e.taskId));
    const timekeeper = new Timekeeper({ store, clock, timers, logger: { warn: vi.fn() }, events });
    return { store, timers, timekeeper, promotedEvents };
  }

  it('promotes what it is told of at its due time, with no read; told before start, it is armed at start', async () => {
    const k = toldOnly();
    k.store.delay('retry', START + 2_000);
    k.timekeeper.expect('retry', START + 2_000);
    expect(k.timers.armed).toBe(0);
    k.timekeeper.start();
    expect(k.timers.armed).toBe(1);
    expect(k.timekeeper.expectedWaiting).toBe(1);
    expect(k.timekeeper.dueWithin(1_999)).toBe(false);
    expect(k.timekeeper.dueWithin(2_000)).toBe(true);
    await advance(1_999);
    expect(k.store.promoteCalls).toEqual([]);
    await advance(LATE_MS + 1);
    expect(k.store.promotions).toEqual([{ id: 'retry', at: expect.any(Number) }]);
    expect(k.store.promotions[0]!.at - (START + 2_000)).toBeLessThanOrEqual(LATE_MS);
    expect(k.store.reads).toEqual([]);
    expect(k.promotedEvents).toEqual(['retry']);
    expect(k.timekeeper.promotedAt).toBe(k.store.promotions[0]!.at);
    expect(k.timekeeper.expectedWaiting).toBe(0);
    expect(k.timers.armed).toBe(0);
    await k.timekeeper.stop();
  });

  it('one it finds gone (cancelled, or promoted by another) is dropped, not retried', async () => {
    const k = toldOnly();
    k.timekeeper.start();
    k.timekeeper.expect('cancelled', START + 500);
    await advance(500 + LATE_MS);
    expect(k.store.promoteCalls.map((c) => c.id)).toEqual(['cancelled']);
    expect(k.timekeeper.expectedWaiting).toBe(0);
    expect(k.promotedEvents).toEqual([]);
    await advance(10_000);
    expect(k.store.promoteCalls).toHaveLength(1);
    expect(k.timers.armed).toBe(0);
    await k.timekeeper.stop();
  });

  it('one the store finds not yet due (this clock stepped back) is armed again and promoted when due', async () => {
    const k = toldOnly();
    k.store.delay('retry', START + 1_000);
    k.timekeeper.start();
    k.timekeeper.expect('retry', START + 1_000);
    // The first promote is answered as the clock steps back 300 ms: the store says not yet.
    const promote = k.store.promote.bind(k.store);
    vi.spyOn(k.store, 'promote').mockImplementationOnce(async (input) => {
      vi.setSystemTime(Date.now() - 300);
      return promote(input);
    });
    await advance(1_000 + LATE_MS);
    expect(k.store.promotions).toEqual([]);
    expect(k.timekeeper.expectedWaiting).toBe(1);
    await advance(300 + LATE_MS);
    expect(k.store.promotions.map((p) => p.id)).toEqual(['retry']);
    expect(k.timekeeper.expectedWaiting).toBe(0);
    await k.timekeeper.stop();
  });

  it('stopped, it leaves what it was told of waiting (counted: the run hands over) and promotes nothing more', async () => {
    const k = toldOnly();
    k.store.delay('later', START + 60_000);
    k.timekeeper.start();
    k.timekeeper.expect('later', START + 60_000);
    await advance(1_000);
    await k.timekeeper.stop();
    expect(k.timekeeper.expectedWaiting).toBe(1);
    expect(k.timers.armed).toBe(0);
    await advance(60_000 + LATE_MS);
    expect(k.store.promoteCalls).toEqual([]);
    expect(await k.timekeeper.dueAfterRelease()).toBe(false); // it reads nothing
  });
});

describe('Timekeeper and dueDelayed on dynalite (real TaskStore)', () => {
  let server: TestDynamo;
  beforeAll(async () => {
    server = await startTestDynamo();
  });
  afterAll(() => server.close());

  const TASKS = 1_000;
  /** The timekeeper starts this long before the due instant (its first read sees every task). */
  const LEAD_MS = 1_500;
  /**
   * From the due instant to the last promotion. dynalite runs in this process and answers one
   * promotion (a conditional update moving two index keys) at a time: on the 2-core test machine
   * 1,000 took 3.5-3.8 s when quiet, 5.7 s beside test/store-claim.test.ts and 7.6 s at load 7
   * (DynamoDB: about 0.2 s at 64 in flight). The bound is the worst of those with 2x margin; the
   * figure is printed with every run.
   */
  const PROMOTE_ALL_WITHIN_MS = 15_000;

  it(`promotes ${TASKS} tasks falling due at the same instant, on real timers`, async () => {
    // Real time, shifted once the tasks are written so that their due time is LEAD_MS away (no waiting).
    let offset = 0;
    const clock = { now: () => Date.now() + offset };
    const t = await createTestStore(server.endpoint, {}, { clock });
    const type = 'tk.volume';
    const dueAt = clock.now() + 60_000;
    const seedStart = Date.now();
    const ids = await seedEnqueued(
      t,
      Array.from({ length: TASKS }, (_, n) => ({ type, owner: 'o', payload: { n }, availableAt: dueAt })),
    );
    const seedMs = Date.now() - seedStart;
    expect(await t.store.depth([type])).toMatchObject({ ready: 0, delayed: TASKS });

    const promoteCalls: number[] = [];
    const promote = t.store.promote.bind(t.store);
    vi.spyOn(t.store, 'promote').mockImplementation((input) => {
      promoteCalls.push(clock.now());
      return promote(input);
    });
    let lastPromotionAt = 0;
    const unsubscribe = t.store.events.on('task:readied', () => (lastPromotionAt = clock.now()));
    const timers = new TimerSet();
    const timekeeper = new Timekeeper({
      store: t.store,
      clock,
      timers,
      logger: { warn: vi.fn() },
      // Refreshes land inside the burst, as in production: they must not repeat its writes.
      reads: { store: t.store, refreshMs: TUNING.timekeeper.minRefreshMs, horizonMs: KICK_HORIZON_MS },
    });
    offset = dueAt - LEAD_MS - Date.now();
    timekeeper.start();
    try {
      await vi.waitFor(() => expect(timekeeper.nextDueAt).toBe(dueAt), { timeout: LEAD_MS, interval: 10 });
      expect(timekeeper.promoted).toBe(0);
      await vi.waitFor(() => expect(timekeeper.promoted).toBe(TASKS), {
        timeout: dueAt - clock.now() + PROMOTE_ALL_WITHIN_MS + 1_000,
        interval: 20,
      });
      const firstCallMs = promoteCalls[0]! - dueAt;
      const spreadMs = lastPromotionAt - dueAt;
      console.log(
        `timekeeper on dynalite: ${TASKS} delayed tasks written in ${seedMs} ms; first promotion sent ` +
          `${firstCallMs} ms after the due instant, the last of ${TASKS} applied ${spreadMs} ms after it ` +
          `(${Math.round((TASKS * 1_000) / Math.max(1, spreadMs))} promotions/s)`,
      );
      expect(firstCallMs, 'the due timer fires at the due instant').toBeGreaterThanOrEqual(0);
      // Before the refresh 500 ms past the instant (started 1.5 s ahead, one a second) would have found
      // it overdue: the due timer, late at most by a loaded machine's scheduling.
      expect(firstCallMs, 'the due timer fires at the due instant').toBeLessThan(450);
      expect(spreadMs, `due -> last promotion took ${spreadMs} ms`).toBeLessThanOrEqual(
        PROMOTE_ALL_WITHIN_MS,
      );
      expect(promoteCalls, 'one promotion per task, none repeated').toHaveLength(TASKS);
      expect(await t.store.depth([type])).toMatchObject({ ready: TASKS, delayed: 0 });
      const sample = await Promise.all(ids.filter((_, i) => i % 50 === 0).map((id) => t.store.get({ id })));
      expect(sample.map((task) => task.status)).toEqual(sample.map(() => 'QUEUED'));
      expect(timekeeper.nextDueAt).toBeUndefined();
    } finally {
      unsubscribe();
      await timekeeper.stop();
    }
    expect(timers.armed).toBe(0);
  }, 40_000);

  it('dueDelayed: only delayed tasks due at or before `before`, across shards, within `limit`', async () => {
    const t = await createTestStore(server.endpoint);
    const now = t.clock.now();
    const type = 'tk.read';
    const delayed = async (availableAt: number) =>
      (await t.store.enqueue({ type, owner: 'o', payload: null, availableAt })).task.id;
    // 40 delayed tasks due 1..40 s from now, over many shards.
    const due = new Map<string, number>();
    for (let i = 1; i <= 40; i++) due.set(await delayed(now + i * 1_000), now + i * 1_000);
    // Two due-now tasks: one stays QUEUED (in the ready index), one is claimed (RUNNING, in the lease partitions).
    const dueNow = [
      (await t.store.enqueue({ type, owner: 'o', payload: null })).task.id,
      (await t.store.enqueue({ type, owner: 'o', payload: null })).task.id,
    ];
    const round = await t.store.claim({ workerId: 'w', types: [type], max: 1 }, new ClaimState());
    expect(round.claimed).toHaveLength(1);
    const running = round.claimed[0]!.task.id;
    const ready = dueNow.find((id) => id !== running)!;
    expect((await t.store.get({ id: running })).status).toBe('RUNNING');
    expect((await t.store.get({ id: ready })).status).toBe('QUEUED');

    const before = now + 20_000;
    const found = await t.store.dueDelayed({ before, limit: 1_000 });
    const expected = [...due].filter(([, at]) => at <= before);
    expect(found).toHaveLength(20); // `before` is inclusive: the task due at exactly 20 s is in
    expect(new Map(found.map((d) => [d.id, d.dueAt]))).toEqual(new Map(expected));
    expect(new Set(found.map((d) => shardForId(d.id))).size).toBeGreaterThan(4);
    expect(found.map((d) => d.id)).not.toContain(ready);
    expect(found.map((d) => d.id)).not.toContain(running);

    // However far ahead it looks, never a RUNNING task (its lease expiry is in the same index) nor a ready one.
    const wide = await t.store.dueDelayed({ before: now + 24 * 3_600_000, limit: 1_000 });
    expect(wide).toHaveLength(40);
    expect(wide.map((d) => d.id)).not.toContain(running);
    expect(wide.map((d) => d.id)).not.toContain(ready);

    // Nothing due before the first delayed task.
    expect(await t.store.dueDelayed({ before: now + 999, limit: 1_000 })).toEqual([]);

    // A limit of 16 takes at most one per partition: each partition's earliest.
    const limited = await t.store.dueDelayed({ before: now + 60_000, limit: 16 });
    expect(limited.length).toBeLessThanOrEqual(16);
    expect(limited.length).toBe(new Set([...due.keys()].map(shardForId)).size);
    for (const d of limited) {
      const earliestOfShard = Math.min(
        ...[...due].filter(([id]) => shardForId(id) === shardForId(d.id)).map(([, at]) => at),
      );
      expect(d.dueAt).toBe(earliestOfShard);
    }

    // A promoted task (QUEUED now) is no longer read; the rest still are.
    t.clock.advance(1_000);
    const first = [...due].find(([, at]) => at === now + 1_000)![0];
    expect(await t.store.promote({ id: first })).toBe(true);
    const after = await t.store.dueDelayed({ before: now + 60_000, limit: 1_000 });
    expect(after).toHaveLength(39);
    expect(after.map((d) => d.id)).not.toContain(first);
  });
});
