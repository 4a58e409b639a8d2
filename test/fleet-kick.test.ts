/**
 * Starting worker invocations: the kick on enqueue (coalesced, due tasks only), the scaler of a
 * saturated worker (once per interval, below the cap), and one fleet invocation around its seat.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { LeaseEvents } from '../shared/events.js';
import { EnqueueKicker, KICK_HORIZON_MS } from '../shared/fleet/enqueue-kicker.js';
import { runFleetInvocation, type FleetInvocationDeps } from '../shared/fleet/fleet-invocation.js';
import { FleetScaler, SCALE_INTERVAL_MS } from '../shared/fleet/fleet-scaler.js';
import { FleetSeats } from '../shared/fleet/fleet-seats.js';
import { writeTargetOf } from '../shared/store/context.js';
import type { RunSummary } from '../shared/worker/worker.js';
import { deferred, FakeInvoker, flush, seededRandom } from './support/fleet-fakes.js';
import { ManualClock } from './support/manual-clock.js';
import { startTestDynamo, type TestDynamo } from './support/test-dynamo.js';
import { createTestStore } from './support/test-store.js';

const INTERVAL = 250;

let server: TestDynamo;
beforeAll(async () => {
  server = await startTestDynamo();
});
afterAll(() => server.close());

function kickWorld() {
  const clock = new ManualClock();
  const invoker = new FakeInvoker();
  const events = new LeaseEvents();
  const kicker = new EnqueueKicker(invoker, clock, INTERVAL);
  const unsubscribe = kicker.listen(events);
  const enqueued = (availableAt = clock.now(), taskId = 't') =>
    events.emit('task:enqueued', { taskId, type: 'demo.echo', availableAt });
  return { clock, invoker, events, kicker, unsubscribe, enqueued };
}

describe('EnqueueKicker (fake invoker, manual clock)', () => {
  it('a burst of 1,000 enqueues within one interval starts one invocation; the next interval another', async () => {
    const k = kickWorld();
    for (let i = 0; i < 1_000; i++) {
      k.enqueued(k.clock.now(), `t-${i}`);
      if (i % 5 === 4) k.clock.advance(1); // spread over 200 ms, all inside one 250 ms interval
    }
    expect(k.invoker.calls).toEqual(['leasehold.kick']);
    k.clock.advance(INTERVAL - 200 - 1);
    k.enqueued();
    expect(k.invoker.calls).toHaveLength(1);
    k.clock.advance(1); // one interval after the first kick
    k.enqueued();
    k.enqueued();
    expect(k.invoker.calls).toEqual(['leasehold.kick', 'leasehold.kick']);
    await k.kicker.settled();
  });

  it('kicks only for tasks due within the horizon; a later task does not use up the interval', () => {
    const k = kickWorld();
    k.enqueued(k.clock.now() + KICK_HORIZON_MS + 1);
    k.enqueued(k.clock.now() + 24 * 3_600_000);
    expect(k.invoker.calls).toEqual([]);
    // A task due within the horizon right after still kicks at once: for a timekeeper only.
    k.enqueued(k.clock.now() + KICK_HORIZON_MS);
    expect(k.invoker.calls).toEqual(['leasehold.due']);
    expect(k.invoker.hints).toEqual([{ keepTime: true }]);
    // Overdue tasks (availableAt in the past) are due now: a worker that reads their partition first.
    k.clock.advance(INTERVAL);
    k.enqueued(k.clock.now() - 60_000);
    expect(k.invoker.calls).toEqual(['leasehold.due', 'leasehold.kick']);
    expect(k.invoker.hints[1]).toEqual({ lookFirst: { type: 'demo.echo', shard: expect.any(Number) } });
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

describe('EnqueueKicker on a real TaskStore (emulator)', () => {
  it('enqueueing a due task starts one kick; an idempotent repeat starts none; a delayed task none', async () => {
    const t = await createTestStore(server.endpoint);
    const invoker = new FakeInvoker();
    const kicker = new EnqueueKicker(invoker, t.clock, INTERVAL);
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

describe('EnqueueKicker reading the fleet (emulator)', () => {
  it('starts no worker at the cap and no timekeeper while one keeps time; starts each when there is room', async () => {
    const t = await createTestStore(server.endpoint);
    const seats = new FleetSeats({
      target: writeTargetOf(t.store.ctx),
      clock: t.clock,
      random: seededRandom(3),
      cap: 2,
    });
    const invoker = new FakeInvoker();
    const kicker = new EnqueueKicker(invoker, t.clock, INTERVAL, seats);
    kicker.listen(t.store.events);
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
    await enqueue(); // due, at the cap: nothing
    expect(invoker.calls).toEqual(['leasehold.kick']);
    await seats.release(keeper);
    await seats.release(other);
    await enqueue(30_000); // delayed, nobody keeps time: a timekeeper
    expect(invoker.calls).toEqual(['leasehold.kick', 'leasehold.due']);
    expect(invoker.hints.at(-1)).toEqual({ keepTime: true });
  });
});

describe('FleetScaler (fake seats, fake invoker)', () => {
  function scalerWorld(running: () => Promise<number>, cap = 4) {
    const clock = new ManualClock();
    const invoker = new FakeInvoker();
    const seats = { cap, running: vi.fn(running) };
    const logger = { warn: vi.fn() };
    const scaler = new FleetScaler({ seats, invoker, clock, logger });
    return { clock, invoker, seats, logger, scaler };
  }

  it('saturated twice within the interval starts one invocation; after the interval another', async () => {
    const s = scalerWorld(async () => 1);
    s.scaler.saturated();
    s.clock.advance(SCALE_INTERVAL_MS - 1);
    s.scaler.saturated();
    await s.scaler.settled();
    expect(s.invoker.calls).toEqual(['leasehold.scale']);
    expect(s.seats.running).toHaveBeenCalledTimes(1); // the seats are read at most once per interval
    expect(s.scaler.started).toBe(1);
    s.clock.advance(1);
    s.scaler.saturated();
    await s.scaler.settled();
    expect(s.invoker.calls).toHaveLength(2);
    expect(s.scaler.started).toBe(2);
  });

  it('starts none at the cap (or above it)', async () => {
    let running = 4;
    const s = scalerWorld(async () => running, 4);
    s.scaler.saturated();
    await s.scaler.settled();
    running = 5;
    s.clock.advance(SCALE_INTERVAL_MS);
    s.scaler.saturated();
    await s.scaler.settled();
    expect(s.seats.running).toHaveBeenCalledTimes(2);
    expect(s.invoker.calls).toEqual([]);
    expect(s.scaler.started).toBe(0);
    running = 3;
    s.clock.advance(SCALE_INTERVAL_MS);
    s.scaler.saturated();
    await s.scaler.settled();
    expect(s.invoker.calls).toEqual(['leasehold.scale']);
  });

  it('a failed read of the seats warns, starts nothing and throws nowhere', async () => {
    const s = scalerWorld(() => Promise.reject(new Error('table unreachable')));
    expect(() => s.scaler.saturated()).not.toThrow();
    await expect(s.scaler.settled()).resolves.toBeUndefined();
    expect(s.invoker.calls).toEqual([]);
    expect(s.logger.warn).toHaveBeenCalledTimes(1);
    expect(s.logger.warn.mock.calls[0]![1]).toMatchObject({
      error: expect.stringContaining('table unreachable'),
    });
  });

  it('settled() waits for a start still in flight; a failed start is not counted', async () => {
    const s = scalerWorld(async () => 0);
    s.invoker.held = true;
    s.scaler.saturated();
    let settled = false;
    const waiting = s.scaler.settled().then(() => (settled = true));
    await flush();
    expect(s.invoker.inFlight).toBe(1);
    expect(settled).toBe(false);
    s.invoker.answerAll(false);
    await waiting;
    expect(s.scaler.started).toBe(0);
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
      scaler: FleetInvocationDeps['scaler'] = { settled: async () => {} },
    ) => ({
      worker,
      seats,
      scaler,
      invoker,
      timekeeper: () => ({
        start: () => undefined,
        stop: async () => undefined,
        dueWithin: () => false,
        nextDueAt: undefined,
      }),
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
      w.deps({ run }, { settled: () => scalerDone.promise }),
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
    expect(result).toEqual({ ...summary, seat: 0, timekeeper: true, handedOver: false });
    expect(run).toHaveBeenCalledWith({ remainingTimeMs: expect.any(Function), duty: expect.anything() });
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

  it('a seat that cannot be taken (the table fails) claims nothing: seat-unavailable', async () => {
    const w = await invocationWorld(2);
    const run = vi.fn(async () => summary);
    const failing = {
      take: () => Promise.reject(new Error('throttled')),
      takeTimekeeper: () => Promise.reject(new Error('throttled')),
      release: w.seats.release.bind(w.seats),
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
});
