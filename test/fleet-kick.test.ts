/**
 * Starting worker invocations: the kick on enqueue (coalesced, due tasks only), the scaler of a
 * saturated worker (once per interval, below the cap), and one fleet invocation around its seat.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { LeaseEvents } from '../shared/events.js';
import { EnqueueKicker } from '../shared/fleet/enqueue-kicker.js';
import { kickHorizonMs } from '../shared/fleet/fleet-rules.js';
import { runFleetInvocation, type FleetInvocationDeps } from '../shared/fleet/fleet-invocation.js';
import { FleetScaler } from '../shared/fleet/fleet-scaler.js';
import { FleetSeats, type SeatLease } from '../shared/fleet/fleet-seats.js';
import { writeTargetOf } from '../shared/store/context.js';
import type { RunOptions, RunSummary } from '../shared/worker/worker.js';
import { deferred, FakeInvoker, fakeTimekeeper, flush, seededRandom } from './support/fleet-fakes.js';
import { ManualClock } from './support/manual-clock.js';
import { startTestDynamo, type TestDynamo } from './support/test-dynamo.js';
import { createTestStore } from './support/test-store.js';
import { TUNING } from '../shared/tuning.js';

const INTERVAL = 250;
/** The horizon with the default recovery interval (a minute). */
const KICK_HORIZON_MS = kickHorizonMs(60_000);

let server: TestDynamo;
beforeAll(async () => {
  server = await startTestDynamo();
});
afterAll(() => server.close());

function kickWorld() {
  const clock = new ManualClock();
  const invoker = new FakeInvoker();
  const events = new LeaseEvents();
  const kicker = new EnqueueKicker(invoker, clock, INTERVAL, KICK_HORIZON_MS);
  const unsubscribe = kicker.listen(events);
  const enqueued = (availableAt = clock.now(), taskId = 't') =>
    events.emit('task:enqueued', { taskId, type: 'demo.echo', availableAt });
  /** A due task of the default priority: the store's event names its ready key. */
  const enqueuedByKey = (taskId: string) =>
    events.emit('task:enqueued', {
      taskId,
      type: 'demo.echo',
      availableAt: clock.now(),
      readySk: `sk-${taskId}`,
    });
  return { clock, invoker, events, kicker, unsubscribe, enqueued, enqueuedByKey };
}

describe('EnqueueKicker (fake invoker, manual clock)', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('a burst of 1,000 enqueues within one interval: the first kicked at once by key, the rest in one kick at the interval', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const k = kickWorld();
    for (let i = 0; i < 1_000; i++) {
      k.enqueuedByKey(`t-${i}`);
      if (i % 5 === 4) k.clock.advance(1); // spread over 200 ms, all inside one 250 ms interval
    }
    expect(k.invoker.calls).toEqual(['leasehold.kick']);
    expect(k.invoker.hints[0]).toEqual({
      offers: [{ taskId: 't-0', type: 'demo.echo', shard: expect.any(Number), readySk: 'sk-t-0' }],
    });
    await flush();
    k.clock.advance(INTERVAL - 200 - 1);
    await vi.advanceTimersByTimeAsync(INTERVAL - 200 - 1);
    expect(k.invoker.calls).toHaveLength(1);
    k.clock.advance(1); // one interval after the first kick: the rest go in one kick
    await vi.advanceTimersByTimeAsync(1);
    expect(k.invoker.calls).toEqual(['leasehold.kick', 'leasehold.kick']);
    const second = k.invoker.hints[1]!;
    // The first TUNING.kick.maxOffers by key, in order; the invocation reads for the others.
    expect(second.offers?.map((o) => o.taskId)).toEqual(
      Array.from({ length: TUNING.kick.maxOffers }, (_, i) => `t-${i + 1}`),
    );
    expect(second).toMatchObject({ readAll: true, lookFirst: { type: 'demo.echo' } });
    // Nothing is left: no third kick.
    k.clock.advance(INTERVAL);
    await vi.advanceTimersByTimeAsync(INTERVAL);
    expect(k.invoker.calls).toHaveLength(2);
    await k.kicker.settled();
  });

  it('settled() waits for a kick still waiting for its interval, so a Lambda answers only after it went out', async () => {
    const k = kickWorld();
    k.enqueuedByKey('a');
    k.enqueuedByKey('b'); // within the interval: waits for it
    expect(k.invoker.calls).toHaveLength(1);
    await k.kicker.settled(INTERVAL + 200);
    expect(k.invoker.calls).toHaveLength(2);
    expect(k.invoker.hints[1]?.offers?.map((o) => o.taskId)).toEqual(['b']);
  });

  it('kicks only for tasks due within the horizon; a later task does not use up the interval', async () => {
    const k = kickWorld();
    k.enqueued(k.clock.now() + KICK_HORIZON_MS + 1);
    k.enqueued(k.clock.now() + 24 * 3_600_000);
    expect(k.invoker.calls).toEqual([]);
    // A task due within the horizon right after still kicks at once: for a timekeeper only.
    k.enqueued(k.clock.now() + KICK_HORIZON_MS);
    expect(k.invoker.calls).toEqual(['leasehold.due']);
    expect(k.invoker.hints).toEqual([{ keepTime: true }]);
    await flush();
    // Overdue tasks (availableAt in the past) are due now: a worker that reads their partition first.
    k.clock.advance(INTERVAL);
    k.enqueued(k.clock.now() - 60_000);
    expect(k.invoker.calls).toEqual(['leasehold.due', 'leasehold.kick']);
    expect(k.invoker.hints[1]).toEqual({
      readAll: true,
      lookFirst: { type: 'demo.echo', shard: expect.any(Number) },
    });
  });

  it('stops kicking once unsubscribed', () => {
    const k = kickWorld();
    k.unsubscribe();
    k.enqueued();
    expect(k.invoker.calls).toEqual([]);
  });

  it('settled() waits for a start still in flight, and returns at once when none is', async () => {
    const k = kickWorld();
    await k.kicker.settled(); // nothing in flight
    k.invoker.held = true;
    k.enqueued();
    expect(k.invoker.inFlight).toBe(1);
    let settled = false;
    const waiting = k.kicker.settled().then(() => (settled = true));
    await flush();
    expect(settled).toBe(false);
    k.invoker.answerAll(false); // a failed Invoke settles too (start never rejects)
    await waiting;
    expect(settled).toBe(true);
    // A finished start is forgotten: a later settled() does not wait on anything.
    k.clock.advance(INTERVAL);
    k.enqueued();
    let second = false;
    const again = k.kicker.settled().then(() => (second = true));
    await flush();
    expect(second).toBe(false);
    k.invoker.answerAll();
    await again;
  });
});

describe('EnqueueKicker with paused types (fake invoker, manual clock)', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('sends no kick for tasks of paused types only, drops their offers beside others, and kicks a resume', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const clock = new ManualClock();
    const invoker = new FakeInvoker();
    const events = new LeaseEvents();
    const paused = new Set(['demo.sleep']);
    const asked: string[][] = [];
    const claimable = async (types: readonly string[]) => {
      asked.push([...types]);
      return types.filter((t) => !paused.has(t));
    };
    const kicker = new EnqueueKicker(invoker, clock, INTERVAL, KICK_HORIZON_MS, undefined, claimable);
    kicker.listen(events);
    const due = (taskId: string, type: string) =>
      events.emit('task:enqueued', { taskId, type, availableAt: clock.now(), readySk: `sk-${taskId}` });

    due('s1', 'demo.sleep');
    await kicker.settled(1_000);
    expect(invoker.calls).toEqual([]);
    expect(asked).toEqual([['demo.sleep']]);

    await vi.advanceTimersByTimeAsync(INTERVAL);
    due('s2', 'demo.sleep');
    due('e1', 'demo.echo');
    await vi.advanceTimersByTimeAsync(INTERVAL);
    await kicker.settled(1_000);
    expect(invoker.calls).toEqual(['leasehold.kick']);
    expect(invoker.hints[0]!.offers!.map((o) => o.taskId)).toEqual(['e1']);

    // A resume kicks whatever the (possibly stale) view of the pauses says.
    await vi.advanceTimersByTimeAsync(INTERVAL);
    events.emit('type:resumed', { type: 'demo.sleep' });
    await vi.advanceTimersByTimeAsync(INTERVAL);
    await kicker.settled(1_000);
    expect(invoker.calls).toEqual(['leasehold.kick', 'leasehold.kick']);
    expect(invoker.hints[1]).toMatchObject({ readAll: true });
  });
});

describe('EnqueueKicker on a real TaskStore (emulator)', () => {
  it('enqueueing a due task starts one kick; an idempotent repeat starts none; a delayed task none', async () => {
    const t = await createTestStore(server.endpoint);
    const invoker = new FakeInvoker();
    const kicker = new EnqueueKicker(invoker, t.clock, INTERVAL, KICK_HORIZON_MS);
    kicker.listen(t.store.events);

    const first = await t.store.enqueue({
      type: 'mail',
      owner: 'o',
      payload: { n: 1 },
      idempotencyKey: 'k-1',
    });
    expect(first.created).toBe(true);
    expect(invoker.calls).toEqual(['leasehold.kick']);

    // Past the interval, so only `created: false` can keep the repeat from kicking.
    t.clock.advance(INTERVAL);
    const repeat = await t.store.enqueue({
      type: 'mail',
      owner: 'o',
      payload: { n: 1 },
      idempotencyKey: 'k-1',
    });
    expect(repeat).toMatchObject({ created: false, task: { id: first.task.id } });
    expect(invoker.calls).toHaveLength(1);

    await t.store.enqueue({ type: 'mail', owner: 'o', payload: { n: 2 }, delayMs: KICK_HORIZON_MS + 1_000 });
    expect(invoker.calls).toHaveLength(1);

    // A new due task, still past the interval: kicks (so the gate was open for the repeat above).
    await t.store.enqueue({ type: 'mail', owner: 'o', payload: { n: 3 } });
    expect(invoker.calls).toHaveLength(2);
    await kicker.settled();
  });
});

/** A store on the emulator, a fleet of two seats on its table, and a kicker that reads them, listening. */
async function kickFleetWorld(seed: number) {
  const t = await createTestStore(server.endpoint);
  const seats = new FleetSeats({
    target: writeTargetOf(t.store.ctx),
    clock: t.clock,
    random: seededRandom(seed),
    cap: 2,
  });
  const invoker = new FakeInvoker();
  const kicker = new EnqueueKicker(invoker, t.clock, INTERVAL, KICK_HORIZON_MS, seats);
  kicker.listen(t.store.events);
  return { t, seats, invoker, kicker };
}

describe('EnqueueKicker reading the fleet (emulator)', () => {
  it('starts no timekeeper while one keeps time, one when none does; a due task is kicked for without a read, at the cap too', async () => {
    const { t, seats, invoker, kicker } = await kickFleetWorld(3);
    const enqueue = async (delayMs?: number) => {
      t.clock.advance(INTERVAL);
      await t.store.enqueue({ type: 'mail', owner: 'o', payload: {}, ...(delayMs ? { delayMs } : {}) });
      await kicker.settled(5_000);
    };
    const until = t.clock.now() + 600_000;
    const keeper = (await seats.take('timekeeper', until))!;
    await enqueue(30_000); // delayed, a timekeeper runs: nothing
    expect(invoker.calls).toEqual([]);
    await enqueue(); // due, 1 of 2 seats held: a worker
    expect(invoker.calls).toEqual(['leasehold.kick']);
    const other = (await seats.take('worker', until))!;
    t.meter.reset();
    // Due, at the cap: kicked all the same, with no read (the invocation rings a held seat: below).
    await enqueue();
    expect(invoker.calls).toEqual(['leasehold.kick', 'leasehold.kick']);
    expect(t.meter.sent.get('Query') ?? 0).toBe(0);
    await seats.release(keeper);
    await seats.release(other);
    await enqueue(30_000); // delayed, nobody keeps time: a timekeeper
    expect(invoker.calls).toEqual(['leasehold.kick', 'leasehold.kick', 'leasehold.due']);
    expect(invoker.hints.at(-1)).toEqual({ keepTime: true });
  });
});

describe('EnqueueKicker for a burst at the cap (emulator)', () => {
  it('a kick for several tasks at the cap rings a held seat instead of starting an invocation; with room it starts one', async () => {
    const { t, seats, invoker, kicker } = await kickFleetWorld(5);
    const burst = async () => {
      for (let i = 0; i < 3; i++) await t.store.enqueue({ type: 'mail', owner: 'o', payload: { i } });
      await kicker.settled(5_000);
      t.clock.advance(INTERVAL);
    };
    const until = t.clock.now() + 600_000;
    const held = [(await seats.take('a', until))!, (await seats.take('b', until))!];
    await burst();
    // The first task alone, at once and without a read; the other two together, after the interval:
    // the fleet is full, so a held seat is rung for them.
    expect(invoker.calls).toEqual(['leasehold.kick']);
    const rings = await Promise.all(held.map((lease) => seats.ringsOf(lease)));
    expect(rings.reduce((a, b) => a + b, 0)).toBe(1);
    await seats.release(held[0]!);
    await burst();
    expect(invoker.calls).toEqual(['leasehold.kick', 'leasehold.kick', 'leasehold.kick']);
    expect(invoker.hints.at(-1)?.offers).toHaveLength(2);
  });
});

describe('FleetScaler (seats on the emulator, fake invoker)', () => {
  async function scalerWorld(cap = 4) {
    const t = await createTestStore(server.endpoint);
    const invoker = new FakeInvoker();
    const seats = new FleetSeats({
      target: writeTargetOf(t.store.ctx),
      clock: t.clock,
      random: seededRandom(2),
      cap,
    });
    const reserve = vi.spyOn(seats, 'reserve');
    const logger = { warn: vi.fn() };
    const scaler = new FleetScaler({ seats, invoker, clock: t.clock, logger });
    /** Seats held by invocations already running (seat 0 first, as a quiet fleet's first invocation takes it). */
    const hold = async (n: number) => {
      for (let i = 0; i < n; i++) await seats.take(`running-${i}`, t.clock.now() + 600_000);
    };
    return { t, invoker, seats, reserve, logger, scaler, hold };
  }

  it('saturated twice within the interval starts one invocation into a seat reserved for it; after the interval another', async () => {
    const s = await scalerWorld();
    await s.hold(1);
    s.scaler.saturated();
    s.t.clock.advance(TUNING.fleet.scaleIntervalMs - 1);
    s.scaler.saturated();
    await s.scaler.settled();
    expect(s.invoker.calls).toEqual(['leasehold.scale']);
    expect(s.reserve).toHaveBeenCalledTimes(1); // the seats are read at most once per interval
    expect(s.scaler.started).toBe(1);
    // The started invocation's event names its seat; on the table that seat is held for it (never seat 0).
    const seat = s.invoker.hints[0]!.seat!;
    expect(seat.index).toBeGreaterThan(0);
    expect((await s.seats.read()).get(seat.index)).toMatchObject({ holder: seat.holder, token: seat.token });
    expect(await s.seats.running()).toBe(2);
    s.t.clock.advance(1);
    s.scaler.saturated();
    await s.scaler.settled();
    expect(s.invoker.calls).toHaveLength(2);
    expect(new Set(s.invoker.hints.map((h) => h.seat!.index)).size).toBe(2);
    expect(await s.seats.running()).toBe(3);
    // A plain scale-up names no burst.
    expect(s.invoker.hints.map((h) => h.expectWorkAt)).toEqual([undefined, undefined]);
  });

  it('saturated while taking a burst: the invocation it starts is told the burst, so it reads the delay partitions', async () => {
    const s = await scalerWorld();
    await s.hold(1);
    const at = s.t.clock.now();
    s.scaler.saturated(at);
    await s.scaler.settled();
    expect(s.invoker.calls).toEqual(['leasehold.scale']);
    expect(s.invoker.hints[0]).toMatchObject({ expectWorkAt: at, seat: { index: expect.any(Number) } });
  });

  it('starts none with every seat held, counting those reserved for invocations still starting', async () => {
    const s = await scalerWorld(4);
    await s.hold(2);
    // Two saturated workers of other processes started one each, not yet running: the fleet is full.
    const others = [await s.seats.reserve(), await s.seats.reserve()];
    expect(others.every(Boolean)).toBe(true);
    s.scaler.saturated();
    await s.scaler.settled();
    expect(s.invoker.calls).toEqual([]);
    expect(s.scaler.started).toBe(0);
    // One of the starting invocations failed to start: its reservation runs out, and the seat is free again.
    s.t.clock.advance(TUNING.fleet.reservationMs + 1);
    await s.seats.adopt(others[0]!, 'env-late/req-1', s.t.clock.now() + 600_000); // the other did start
    s.scaler.saturated();
    await s.scaler.settled();
    expect(s.invoker.calls).toEqual(['leasehold.scale']);
    expect(s.invoker.hints[0]!.seat!.index).toBe(others[1]!.index);
  });

  it('a failed read of the seats warns, starts nothing and throws nowhere', async () => {
    const s = await scalerWorld();
    s.reserve.mockRejectedValueOnce(new Error('table unreachable'));
    expect(() => s.scaler.saturated()).not.toThrow();
    await expect(s.scaler.settled()).resolves.toBeUndefined();
    expect(s.invoker.calls).toEqual([]);
    expect(s.logger.warn).toHaveBeenCalledTimes(1);
    expect(s.logger.warn.mock.calls[0]![1]).toMatchObject({
      error: expect.stringContaining('table unreachable'),
    });
  });

  it('settled() waits for a start still in flight; a failed start is not counted and gives its seat back', async () => {
    const s = await scalerWorld();
    s.invoker.held = true;
    s.scaler.saturated();
    let settled = false;
    const waiting = s.scaler.settled().then(() => (settled = true));
    await vi.waitFor(() => expect(s.invoker.inFlight).toBe(1));
    expect(settled).toBe(false);
    expect(await s.seats.running()).toBe(1);
    s.invoker.answerAll(false);
    await waiting;
    expect(s.scaler.started).toBe(0);
    expect(await s.seats.running()).toBe(0);
  });

  it('a burst announced ahead starts one invocation per share of its tasks, each into its own seat, up to the free seats', async () => {
    const s = await scalerWorld(5);
    await s.hold(1);
    const at = s.t.clock.now() + 5_000;
    s.scaler.prewarm(at, 1_000, 200); // five wanted, four seats free
    await s.scaler.settled();
    expect(s.invoker.calls).toEqual(['leasehold.due', 'leasehold.due', 'leasehold.due', 'leasehold.due']);
    expect(s.invoker.hints.every((h) => h.expectWorkAt === at)).toBe(true);
    expect(new Set(s.invoker.hints.map((h) => h.seat!.index))).toEqual(new Set([1, 2, 3, 4]));
    expect(await s.seats.running()).toBe(5);
  });
});

describe('runFleetInvocation (seats on the emulator, fake worker)', () => {
  const summary: RunSummary = {
    claimed: 2,
    lostRaces: 0,
    heartbeatRounds: 1,
    maxEventLoopLagMs: 0,
    stoppedBecause: 'idle',
    timersArmed: 0,
    retriesWaiting: 0,
  };

  async function invocationWorld(cap: number) {
    const t = await createTestStore(server.endpoint);
    const seats = new FleetSeats({
      target: writeTargetOf(t.store.ctx),
      clock: t.clock,
      random: seededRandom(1),
      cap,
    });
    const logger = { warn: vi.fn(), info: vi.fn() };
    const invoker = new FakeInvoker();
    const deps = (
      worker: FleetInvocationDeps['worker'],
      scaler: FleetInvocationDeps['scaler'] = { settled: async () => {}, refill: async () => false },
    ) => ({
      worker,
      seats,
      scaler,
      invoker,
      timekeeper: fakeTimekeeper,
      pause: async () => undefined,
      clock: t.clock,
      logger,
      clockSkewMs: 5_000,
    });
    return { t, seats, logger, deps, invoker };
  }

  it('holds a seat while the worker runs and gives it back after the scaler settled', async () => {
    const w = await invocationWorld(3);
    const seen: { running: number; holders: (string | undefined)[] }[] = [];
    const scalerDone = deferred();
    let released = false;
    const run = vi.fn(async () => {
      const view = await w.seats.read();
      seen.push({ running: await w.seats.running(), holders: [...view.values()].map((s) => s.holder) });
      return summary;
    });
    const invocation = runFleetInvocation(
      w.deps({ run }, { settled: () => scalerDone.promise, refill: async () => false }),
      'env-1/req-1',
      () => 60_000,
    ).then((r) => ((released = true), r));
    // The worker returned, the scaler's Invoke is still in flight: the seat is still held.
    await vi.waitFor(() => expect(run).toHaveBeenCalledTimes(1));
    await flush(10);
    expect(released).toBe(false);
    expect(await w.seats.running()).toBe(1);
    scalerDone.resolve();
    const result = await invocation;
    expect(seen).toEqual([{ running: 1, holders: ['env-1/req-1'] }]);
    // Seat 0 is the timekeeper's: this run keeps time; nothing was left due, so nothing is handed over.
    expect(result).toEqual({ ...summary, seat: 0, timekeeper: true, handedOver: false, answeredRing: false });
    expect(run).toHaveBeenCalledWith({
      remainingTimeMs: expect.any(Function),
      // Its place among the invocations: its seat of the cap (where its rounds start reading).
      place: { index: 0, of: w.seats.cap },
      timekeeper: expect.anything(),
      onClaimingOver: expect.any(Function),
    });
    expect(w.invoker.calls).toEqual([]);
    expect(await w.seats.running()).toBe(0);
    // Held until the invocation's end plus the skew margin, then given back.
    const [seat] = (await w.seats.read()).values();
    expect(seat).toMatchObject({ index: 0, holder: undefined, token: 1, until: 0 });
  });

  it('cap 1 with the seat held by another invocation: fleet-full, the worker never runs', async () => {
    const w = await invocationWorld(1);
    const other = await w.seats.take('someone-else', w.t.clock.now() + 60_000);
    expect(other?.index).toBe(0);
    const run = vi.fn(async () => summary);
    const result = await runFleetInvocation(w.deps({ run }), 'env-2/req-1', () => 60_000);
    expect(result).toEqual({ seat: undefined, stoppedBecause: 'fleet-full' });
    expect(run).not.toHaveBeenCalled();
    expect((await w.seats.read()).get(0)).toMatchObject({ holder: 'someone-else', token: 1 });
  });

  it('a worker that throws still gives its seat back, and the error reaches the caller', async () => {
    const w = await invocationWorld(2);
    const boom = new Error('worker crashed');
    const result = runFleetInvocation(
      w.deps({
        run: async () => {
          expect(await w.seats.running()).toBe(1);
          throw boom;
        },
      }),
      'env-3/req-1',
      () => 60_000,
    );
    await expect(result).rejects.toBe(boom);
    expect(await w.seats.running()).toBe(0);
    // The freed seat is taken by the next invocation at once.
    expect(await w.seats.take('next', w.t.clock.now() + 60_000)).toMatchObject({ index: 0, token: 2 });
  });

  it('an invocation started into a reserved seat takes that seat over; one whose reservation was taken meanwhile takes a free one', async () => {
    const w = await invocationWorld(3);
    await w.seats.take('keeper', w.t.clock.now() + 600_000);
    const reserved = (await w.seats.reserve())!;
    const run = vi.fn(async () => ({ ...summary, seatsSeen: await w.seats.read() }));
    const result = await runFleetInvocation(w.deps({ run }), 'env-5/req-1', () => 60_000, { seat: reserved });
    expect(result.seat).toBe(reserved.index);
    expect(run).toHaveBeenCalledTimes(1);
    const during = (
      (await run.mock.results[0]!.value) as { seatsSeen: Map<number, { holder?: string; token: number }> }
    ).seatsSeen;
    expect(during.get(reserved.index)).toMatchObject({ holder: 'env-5/req-1', token: reserved.token + 1 });
    // Started too late: the reservation ran out and another invocation holds that seat now.
    const late = (await w.seats.reserve())!;
    w.t.clock.advance(TUNING.fleet.reservationMs + 1);
    const thief = await w.seats.take('thief', w.t.clock.now() + 600_000);
    expect(thief?.index).toBe(late.index);
    const second = await runFleetInvocation(w.deps({ run }), 'env-6/req-1', () => 60_000, { seat: late });
    expect(second.seat).not.toBe(late.index);
    expect(second.seat).toBeGreaterThan(0);
    expect((await w.seats.read()).get(late.index)).toMatchObject({ holder: 'thief' });
  });

  it('an invocation started ahead of a burst offers it to its worker before the run; a failed read still runs', async () => {
    const w = await invocationWorld(3);
    const order: string[] = [];
    const at = w.t.clock.now() + 5_000;
    const offerBurst = vi.fn(async (when: number) => void order.push(`offer ${when}`));
    const run = vi.fn(async () => (order.push('run'), summary));
    await runFleetInvocation({ ...w.deps({ run }), offerBurst }, 'env-7/req-1', () => 60_000, {
      expectWorkAt: at,
    });
    expect(order).toEqual([`offer ${at}`, 'run']);
    expect(run).toHaveBeenCalledWith(expect.objectContaining({ expectWorkAt: at }));
    // Without a burst ahead there is nothing to offer.
    await runFleetInvocation({ ...w.deps({ run }), offerBurst }, 'env-8/req-1', () => 60_000);
    expect(offerBurst).toHaveBeenCalledTimes(1);
    // The read fails: the burst starts through its promotion instead, and the run goes on.
    offerBurst.mockRejectedValueOnce(new Error('throttled'));
    await runFleetInvocation({ ...w.deps({ run }), offerBurst }, 'env-9/req-1', () => 60_000, {
      expectWorkAt: at,
    });
    expect(run).toHaveBeenCalledTimes(3);
    expect(w.logger.warn).toHaveBeenCalledWith(
      expect.stringContaining('burst'),
      expect.objectContaining({ error: expect.stringContaining('throttled') }),
    );
  });

  it('a seat that cannot be taken (the table fails) claims nothing: seat-unavailable', async () => {
    const w = await invocationWorld(2);
    const run = vi.fn(async () => summary);
    const failing = {
      adopt: () => Promise.reject(new Error('throttled')),
      take: () => Promise.reject(new Error('throttled')),
      takeTimekeeper: () => Promise.reject(new Error('throttled')),
      giveBack: w.seats.giveBack.bind(w.seats),
      cap: w.seats.cap,
    };
    const result = await runFleetInvocation(
      { ...w.deps({ run }), seats: failing },
      'env-4/req-1',
      () => 60_000,
    );
    expect(result).toEqual({ seat: undefined, stoppedBecause: 'seat-unavailable' });
    expect(run).not.toHaveBeenCalled();
    expect(w.logger.warn).toHaveBeenCalledTimes(1);
  });
  it("a kick's invocation takes a seat other than 0 with one write, and returns when its tasks ended", async () => {
    const w = await invocationWorld(4);
    const run = vi.fn(async (options: RunOptions) => {
      expect(await options.lookGate?.shouldRead()).toBe(false); // nobody rang its seat
      return summary;
    });
    const offer = { taskId: 't-1', type: 'mail', shard: 3, readySk: 'sk-1' };
    w.t.meter.reset();
    const result = await runFleetInvocation(
      { ...w.deps({ run }), rings: true },
      'env-1/req-1',
      () => 60_000,
      {
        offers: [offer],
      },
    );
    expect(result).toMatchObject({ timekeeper: false, answeredRing: false });
    expect((result as { seat: number }).seat).not.toBe(0);
    // The take, the gate's look at the seat, the give-back: no Query.
    expect(Object.fromEntries(w.t.meter.sent)).toEqual({ UpdateItem: 2, GetItem: 1 });
    expect(run).toHaveBeenCalledWith(
      expect.objectContaining({
        offerReady: [{ id: 't-1', type: 'mail', shard: 3, readySk: 'sk-1' }],
        returnWhenIdle: true,
        lookGate: expect.anything(),
      }),
    );
  });

  it("at the cap a kick's invocation rings the held seat; its holder reads for it, or answers it when it gives the seat back", async () => {
    for (const holderPolls of [true, false]) {
      const w = await invocationWorld(1);
      const holding = deferred();
      const rung = deferred();
      const runCalls: RunOptions[] = [];
      const held = runFleetInvocation(
        {
          ...w.deps({
            run: async (options: RunOptions) => {
              runCalls.push(options);
              // The ring's answer in this invocation (see below): a run that finds nothing.
              if (runCalls.length > 1) return summary;
              holding.resolve();
              await rung.promise;
              if (holderPolls) expect(await options.lookGate?.shouldRead()).toBe(true);
              return summary;
            },
          }),
          rings: true,
        },
        'env-1/req-1',
        () => 60_000,
      );
      await holding.promise;
      const run = vi.fn(async () => summary);
      const kicked = await runFleetInvocation(
        { ...w.deps({ run }), rings: true },
        'env-2/req-1',
        () => 60_000,
        {
          offers: [{ taskId: 't-1', type: 'mail', shard: 3, readySk: 'sk-1' }],
        },
      );
      expect(kicked).toEqual({ seat: undefined, stoppedBecause: 'fleet-full', rang: 0 });
      expect(run).not.toHaveBeenCalled();
      rung.resolve();
      // Read for while it ran: nothing to answer. Not read for: the holder answers it itself, warm (a
      // second run that reads, in the seat taken again), with no Invoke and no cold start.
      const result = await held;
      expect(result).toMatchObject({ answeredRing: !holderPolls });
      expect(w.invoker.calls).toEqual([]);
      if (!holderPolls) {
        expect(result).toMatchObject({ ringAnswer: { seat: 0, answeredRing: false } });
        const again = runCalls.at(-1)!;
        expect(again.lookGate).toBeDefined();
        expect([again.offerReady, again.returnWhenIdle]).toEqual([undefined, undefined]);
      }
    }
  });

  it('a holder rung with little time left starts an invocation that reads instead', async () => {
    const w = await invocationWorld(1);
    let left = 120_000;
    const holding = deferred();
    const rung = deferred();
    const held = runFleetInvocation(
      {
        ...w.deps({
          run: async () => {
            holding.resolve();
            await rung.promise;
            return summary;
          },
        }),
        rings: true,
      },
      'env-1/req-1',
      () => left,
    );
    await holding.promise;
    await runFleetInvocation(
      { ...w.deps({ run: vi.fn(async () => summary) }), rings: true },
      'env-2/req-1',
      () => 60_000,
      {
        offers: [{ taskId: 't-1', type: 'mail', shard: 3, readySk: 'sk-1' }],
      },
    );
    left = TUNING.fleet.answerInPlaceMinRemainingMs - 1;
    rung.resolve();
    expect(await held).toMatchObject({ answeredRing: true });
    expect(w.invoker.calls).toEqual(['leasehold.kick']);
    expect(w.invoker.hints[0]).toEqual({ readAll: true });
  });

  it('a seat freed between the first look and the ring is taken, not rung; a ring aimed at a take that ended is refused', async () => {
    const w = await invocationWorld(1);
    const until = w.t.clock.now() + 60_000;
    const first = (await w.seats.take('a', until))!;
    const [seat] = (await w.seats.read()).values();
    await w.seats.release(first);
    // Rung after its holder gave it back: nobody would answer, so the ring is refused.
    expect(await w.seats.ring(seat!)).toBe(false);
    expect(await w.seats.takeOrRing('b', until)).toMatchObject({ lease: { index: 0, holder: 'b' } });
    expect(await w.seats.takeOrRing('c', until)).toEqual({ rung: 0 });
    expect(await w.seats.giveBack((await w.seats.read()).get(0) as SeatLease)).toEqual({
      released: true,
      rings: 1,
    });
  });

  it('a holder that gives its seat back and takes it again between the read and the ring is rung on a second look; three refused looks answer none', async () => {
    const t = await createTestStore(server.endpoint);
    const until = t.clock.now() + 60_000;
    /** Seats whose holder 'a' gives its seat back and takes it again (a new token) just before each of the first `retakes` rings lands. */
    class RetakenBeforeRing extends FleetSeats {
      rings = 0;
      constructor(
        private retakes: number,
        public held: SeatLease,
      ) {
        super({ target: writeTargetOf(t.store.ctx), clock: t.clock, random: seededRandom(1), cap: 1 });
      }
      override async ring(seat: Parameters<FleetSeats['ring']>[0]): Promise<boolean> {
        this.rings++;
        if (this.retakes-- > 0) {
          await this.release(this.held);
          this.held = (await this.take('a', until))!;
        }
        return super.ring(seat);
      }
    }
    const plain = new FleetSeats({
      target: writeTargetOf(t.store.ctx),
      clock: t.clock,
      random: seededRandom(1),
      cap: 1,
    });
    const once = new RetakenBeforeRing(1, (await plain.take('a', until))!);
    expect(await once.takeOrRing('c', until)).toEqual({ rung: 0 });
    expect(once.rings).toBe(2);
    // The ring reached the newer take, so its holder answers it when it gives the seat back.
    expect(await once.giveBack(once.held)).toEqual({ released: true, rings: 1 });

    const always = new RetakenBeforeRing(Infinity, (await plain.take('a', until))!);
    expect(await always.takeOrRing('d', until)).toEqual({ none: true });
    expect(always.rings).toBe(TUNING.fleet.takeOrRingLooks);
    expect(await always.giveBack(always.held)).toEqual({ released: true, rings: 0 });
  });
});
