/**
 * The timekeeper's hand-over: only the holder of seat 0 keeps time; an invocation that ends while
 * delayed work is still waiting (what its timekeeper knew of, or retries it scheduled) starts the
 * next invocation, after giving its seat back so that one can take seat 0. And the worker function's
 * event, read leniently.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { runFleetInvocation } from '../shared/fleet/fleet-invocation.js';
import { FleetSeats } from '../shared/fleet/fleet-seats.js';
import { workerStartEvent } from '../shared/fleet/worker-start-event.js';
import {
  type InvocationSource,
  type LookFirst,
  type StartHints,
  type WorkerInvoker,
} from '../shared/fleet/worker-invoker.js';
import { writeTargetOf } from '../shared/store/context.js';
import type { RunOptions, RunSummary } from '../shared/worker/worker.js';
import { fakeTimekeeper, runSummary, seededRandom } from './support/fleet-fakes.js';
import { startTestDynamo, type TestDynamo } from './support/test-dynamo.js';
import { createTestStore } from './support/test-store.js';
import { TUNING } from '../shared/tuning.js';

let server: TestDynamo;
beforeAll(async () => {
  server = await startTestDynamo();
});
afterAll(() => server.close());

const summary: RunSummary = runSummary(1);

/** Real seats on a fresh table (cap 2: seat 0 keeps time, seat 1 does not), a recording invoker that also notes how many seats are held when it is called. */
async function handoverWorld(cap = 2) {
  const t = await createTestStore(server.endpoint);
  const seats = new FleetSeats({
    target: writeTargetOf(t.store.ctx),
    clock: t.clock,
    random: seededRandom(7),
    cap,
  });
  const starts: { source: InvocationSource; lookFirst?: LookFirst; seatsHeld: number }[] = [];
  const invoker: WorkerInvoker = {
    start: async (source, hints) => {
      const lookFirst = hints?.lookFirst;
      starts.push({ source, ...(lookFirst ? { lookFirst } : {}), seatsHeld: await seats.running() });
      return true;
    },
  };
  const timekeepers: ReturnType<typeof fakeTimekeeper>[] = [];
  /** The last look's waits, and how many seats were held during each. */
  const pauses: { ms: number; seatsHeld: number }[] = [];
  const logger = { warn: vi.fn(), info: vi.fn() };
  /** One invocation around `run`; the timekeeper it is given (if any) is the last in `timekeepers`. */
  const invoke = (
    run: (options: RunOptions) => Promise<RunSummary>,
    holder = 'env-1/req-1',
    lookFirst?: LookFirst,
    extra: StartHints = {},
  ) =>
    runFleetInvocation(
      {
        worker: { run: vi.fn(run) },
        seats,
        scaler: { settled: async () => undefined, refill: async () => false },
        invoker,
        timekeeper: () => {
          const tk = fakeTimekeeper();
          timekeepers.push(tk);
          return tk;
        },
        clock: t.clock,
        logger,
        clockSkewMs: 5_000,
        pause: async (ms) => void pauses.push({ ms, seatsHeld: await seats.running() }),
      },
      holder,
      () => 60_000,
      { ...(lookFirst ? { lookFirst } : {}), ...extra },
    );
  return { t, seats, starts, timekeepers, pauses, logger, invoke };
}

describe('runFleetInvocation hand-over (seats on the emulator, fake worker, invoker and timekeeper)', () => {
  it('seat 0 keeps time: the run gets the reading timekeeper as its own', async () => {
    const w = await handoverWorld();
    let options: RunOptions | undefined;
    const result = await w.invoke(async (o) => ((options = o), summary));
    expect(w.timekeepers).toHaveLength(1);
    expect(options?.timekeeper).toBe(w.timekeepers[0]);
    expect(result).toMatchObject({ seat: 0, timekeeper: true, handedOver: false });
  });

  it('the holder of seat 1 is given no timekeeper (its run keeps its own), and none is made for it', async () => {
    const w = await handoverWorld();
    const keeper = await w.seats.take('the-timekeeper', w.t.clock.now() + 60_000);
    expect(keeper?.index).toBe(0);
    let options: RunOptions | undefined;
    const result = await w.invoke(async (o) => ((options = o), summary), 'env-2/req-1');
    expect(result).toMatchObject({ seat: 1, timekeeper: false, handedOver: false });
    expect(options).toBeDefined();
    expect(options).not.toHaveProperty('timekeeper');
    expect(w.timekeepers).toEqual([]);
    expect(w.starts).toEqual([]);
  });

  it('a timekeeper that still knows a due task when the run ends hands over once, after its seat is free', async () => {
    const w = await handoverWorld();
    const result = await w.invoke(async () => {
      // The timekeeper learned of a task due in 30 s during the run; it is still waiting at the end.
      w.timekeepers[0]!.nextDueAt = w.t.clock.now() + 30_000;
      expect(await w.seats.running()).toBe(1);
      return summary;
    });
    expect(result).toMatchObject({ seat: 0, timekeeper: true, handedOver: true });
    // Started once, and only after seat 0 was given back (the next invocation can take it).
    expect(w.starts).toEqual([{ source: 'leasehold.due', seatsHeld: 0 }]);
    expect(await w.seats.take('next', w.t.clock.now() + 60_000)).toMatchObject({ index: 0 });
  });

  it('a timekeeper that knew nothing due looks once more after giving seat 0 back, and hands over what that look finds', async () => {
    const w = await handoverWorld();
    const result = await w.invoke(async () => {
      // A delayed task enqueued meanwhile sent no kick (seat 0 was held), and this run never saw it.
      w.timekeepers[0]!.dueAfterRelease.mockResolvedValue(true);
      return summary;
    });
    expect(result).toMatchObject({ seat: 0, timekeeper: true, handedOver: true });
    // The look waited the index's lag with seat 0 already free, then read.
    expect(w.pauses).toEqual([{ ms: TUNING.timekeeper.lastLookDelayMs, seatsHeld: 0 }]);
    expect(w.timekeepers[0]!.dueAfterRelease).toHaveBeenCalledTimes(1);
    expect(w.starts).toEqual([{ source: 'leasehold.due', seatsHeld: 0 }]);
  });

  it('the last look that finds nothing (or fails) hands nothing over; seat 1 makes no last look', async () => {
    const w = await handoverWorld();
    expect(await w.invoke(async () => summary)).toMatchObject({ seat: 0, handedOver: false });
    expect(w.timekeepers[0]!.dueAfterRelease).toHaveBeenCalledTimes(1);
    const failing = await w.invoke(async () => {
      w.timekeepers[1]!.dueAfterRelease.mockRejectedValue(new Error('throttled'));
      return summary;
    });
    expect(failing).toMatchObject({ seat: 0, handedOver: false });
    expect(w.logger.warn).toHaveBeenCalledWith(
      'the last look at the delayed tasks failed; the recovery sweep promotes them',
      expect.anything(),
    );
    await w.seats.take('the-timekeeper', w.t.clock.now() + 60_000);
    expect(await w.invoke(async () => summary, 'env-2/req-1')).toMatchObject({ seat: 1, handedOver: false });
    expect(w.pauses).toHaveLength(2);
    expect(w.starts).toEqual([]);
  });

  it('claiming over while a long task runs: seat 0 and its timekeeping go to a successor at once, not when the task ends', async () => {
    const w = await handoverWorld();
    const result = await w.invoke(async (options) => {
      options.onClaimingOver!({ backlog: false });
      // The long task still runs: the successor was started into a free seat 0 meanwhile.
      await vi.waitFor(() => expect(w.starts).toHaveLength(1));
      expect(w.timekeepers[0]!.stop).toHaveBeenCalled();
      expect(await w.seats.take('successor', w.t.clock.now() + 60_000)).toMatchObject({ index: 0 });
      options.onClaimingOver!({ backlog: false }); // told twice: still one successor
      return summary;
    });
    expect(result).toMatchObject({ seat: 0, timekeeper: true, handedOver: true });
    expect(w.starts).toEqual([{ source: 'leasehold.due', seatsHeld: 0 }]);
    // Given back once: no failed second release, no last look.
    expect(w.logger.warn).not.toHaveBeenCalled();
    expect(w.pauses).toEqual([]);
  });

  it('claiming over on another seat frees it and starts nothing, unless retries wait', async () => {
    const w = await handoverWorld(3);
    await w.seats.take('the-timekeeper', w.t.clock.now() + 60_000);
    const quiet = await w.invoke(async (options) => {
      options.onClaimingOver!({ backlog: false });
      await vi.waitFor(async () => expect(await w.seats.running()).toBe(1));
      return summary;
    }, 'env-2/req-1');
    expect(quiet).toMatchObject({ timekeeper: false, handedOver: false });
    expect(quiet.seat).toBeGreaterThan(0);
    expect(w.starts).toEqual([]);
    const retrying = await w.invoke(async (options) => {
      options.onClaimingOver!({ backlog: false });
      return { ...summary, retriesWaiting: 2 };
    }, 'env-3/req-1');
    expect(retrying).toMatchObject({ timekeeper: false, handedOver: true });
    expect(w.starts).toEqual([{ source: 'leasehold.due', seatsHeld: 1 }]);
    expect(w.logger.warn).not.toHaveBeenCalled();
  });

  it('claiming over on another seat while taking a backlog starts a successor into a free seat (the scaler refills)', async () => {
    const w = await handoverWorld(3);
    await w.seats.take('the-timekeeper', w.t.clock.now() + 60_000);
    const refill = vi.fn(async () => (await w.seats.running()) === 1);
    const result = await runFleetInvocation(
      {
        worker: {
          run: async (options) => {
            options!.onClaimingOver!({ backlog: true });
            await vi.waitFor(() => expect(refill).toHaveBeenCalledTimes(1));
            return summary;
          },
        },
        seats: w.seats,
        scaler: { settled: async () => undefined, refill },
        invoker: { start: async () => true },
        timekeeper: fakeTimekeeper,
        clock: w.t.clock,
        logger: w.logger,
        clockSkewMs: 5_000,
        pause: async () => undefined,
      },
      'env-2/req-1',
      () => 60_000,
    );
    // The refill ran after this run's seat was given back (only the timekeeper's seat was held then).
    expect(await refill.mock.results[0]!.value).toBe(true);
    expect(result).toMatchObject({ timekeeper: false, handedOver: true });
  });

  it('an invocation started only to keep time returns at once when another keeps time, and keeps time when none does', async () => {
    const w = await handoverWorld(3);
    const keeper = await w.seats.take('the-timekeeper', w.t.clock.now() + 60_000);
    expect(keeper?.index).toBe(0);
    const run = vi.fn(async () => summary);
    // Seat 1 and 2 are free, but this invocation was only for the timekeeper: it claims nothing.
    expect(await w.invoke(run, 'env-2/req-1', undefined, { keepTime: true })).toEqual({
      seat: undefined,
      stoppedBecause: 'timekeeper-running',
    });
    expect(run).not.toHaveBeenCalled();
    expect(await w.seats.running()).toBe(1);
    await w.seats.release(keeper!);
    expect(await w.invoke(run, 'env-3/req-1', undefined, { keepTime: true })).toMatchObject({
      seat: 0,
      timekeeper: true,
    });
    expect(run).toHaveBeenCalledTimes(1);
  });

  it('retries waiting from a run that did not keep time hand over too', async () => {
    const w = await handoverWorld();
    await w.seats.take('the-timekeeper', w.t.clock.now() + 60_000);
    const result = await w.invoke(async () => ({ ...summary, retriesWaiting: 2 }), 'env-2/req-1');
    expect(result).toMatchObject({ seat: 1, timekeeper: false, handedOver: true, retriesWaiting: 2 });
    // Its own seat (1) is free when the next invocation is started; seat 0 is still the other's.
    expect(w.starts).toEqual([{ source: 'leasehold.due', seatsHeld: 1 }]);
  });

  it('retries waiting from the timekeeper itself hand over once (not once per reason)', async () => {
    const w = await handoverWorld();
    const result = await w.invoke(async () => {
      w.timekeepers[0]!.nextDueAt = w.t.clock.now() + 5_000;
      return { ...summary, retriesWaiting: 1 };
    });
    expect(result).toMatchObject({ seat: 0, handedOver: true });
    expect(w.starts).toEqual([{ source: 'leasehold.due', seatsHeld: 0 }]);
  });

  it('nothing left waiting: no hand-over, from either seat', async () => {
    const w = await handoverWorld();
    expect(await w.invoke(async () => summary)).toMatchObject({ seat: 0, handedOver: false });
    await w.seats.take('the-timekeeper', w.t.clock.now() + 60_000);
    expect(await w.invoke(async () => summary, 'env-2/req-1')).toMatchObject({
      seat: 1,
      handedOver: false,
    });
    expect(w.starts).toEqual([]);
  });

  it('lookFirst reaches worker.run as a one-element list; without it there is no lookFirst at all', async () => {
    const w = await handoverWorld();
    const seen: RunOptions[] = [];
    const hint = { type: 'mail', shard: 5 };
    await w.invoke(async (o) => (seen.push(o), summary), 'env-1/req-1', hint);
    await w.invoke(async (o) => (seen.push(o), summary), 'env-1/req-2');
    expect(seen[0]!.lookFirst).toEqual([hint]);
    expect(seen[1]).not.toHaveProperty('lookFirst');
  });
});

describe('workerStartEvent (lenient parse of the worker function event)', () => {
  it('reads the source and a well-formed lookFirst', () => {
    expect(workerStartEvent({ source: 'leasehold.kick', lookFirst: { type: 'mail', shard: 3 } })).toEqual({
      source: 'leasehold.kick',
      hints: { lookFirst: { type: 'mail', shard: 3 } },
    });
    expect(workerStartEvent({ source: 'leasehold.due', expectWorkAt: 1_800_000_000_000 })).toEqual({
      source: 'leasehold.due',
      hints: { expectWorkAt: 1_800_000_000_000 },
    });
    expect(workerStartEvent({ source: 'leasehold.due', expectWorkAt: 'soon' })).toEqual({
      source: 'leasehold.due',
      hints: {},
    });
    // The scheduled tick's event, with EventBridge's own fields beside it.
    expect(workerStartEvent({ source: 'leasehold.worker', 'detail-type': 'tick', detail: {} })).toEqual({
      source: 'leasehold.worker',
      hints: {},
    });
    expect(workerStartEvent({})).toEqual({ source: 'unknown', hints: {} });
  });

  it("reads the kicked task's key with its partition, and drops a malformed key but keeps the partition", () => {
    const keyed = { type: 'mail', shard: 3, taskId: 'abc', readySk: '1000#0000000000001#0000000000001#abc' };
    expect(workerStartEvent({ source: 'leasehold.kick', lookFirst: keyed }).hints).toEqual({
      lookFirst: keyed,
    });
    expect(
      workerStartEvent({ source: 'leasehold.kick', lookFirst: { ...keyed, taskId: 7, readySk: '' } }).hints,
    ).toEqual({ lookFirst: { type: 'mail', shard: 3 } });
  });

  it("reads a kick's tasks handed over by key and its readAll; drops a malformed or oversized list whole", () => {
    const offer = { taskId: 'abc', type: 'mail', shard: 3, readySk: '1000#0000000000001#0000000000001#abc' };
    expect(workerStartEvent({ source: 'leasehold.kick', offers: [offer], readAll: true }).hints).toEqual({
      offers: [offer],
      readAll: true,
    });
    expect(workerStartEvent({ source: 'leasehold.kick', offers: [{ ...offer, shard: 16 }] }).hints).toEqual(
      {},
    );
    const tooMany = Array.from({ length: TUNING.kick.maxOffers + 1 }, () => offer);
    expect(workerStartEvent({ source: 'leasehold.kick', offers: tooMany, readAll: 'yes' }).hints).toEqual({});
  });

  it('lookFirst with a key reaches worker.run as the partition and as a task handed over by key', async () => {
    const w = await handoverWorld();
    let options: RunOptions | undefined;
    await w.invoke(async (o) => ((options = o), summary), 'env-1/req-1', {
      type: 'mail',
      shard: 3,
      taskId: 'abc',
      readySk: 'sk-abc',
    });
    expect(options?.lookFirst).toEqual([{ type: 'mail', shard: 3 }]);
    expect(options?.offerReady).toEqual([{ id: 'abc', type: 'mail', shard: 3, readySk: 'sk-abc' }]);
  });

  it('reads the seat reserved for the invocation (seat 0 too: a refill or a deep hand-over); a malformed one is dropped', () => {
    const seat = { index: 3, holder: 'starting/abc', token: 7 };
    for (const reserved of [seat, { ...seat, index: 0 }])
      expect(workerStartEvent({ source: 'leasehold.scale', seat: reserved })).toEqual({
        source: 'leasehold.scale',
        hints: { seat: reserved },
      });
    for (const bad of [{ ...seat, index: -1 }, { ...seat, token: 'x' }, { index: 2 }, 'seat'])
      expect(workerStartEvent({ source: 'leasehold.scale', seat: bad })).toEqual({
        source: 'leasehold.scale',
        hints: {},
      });
  });

  it('drops a malformed lookFirst without throwing and keeps the source', () => {
    for (const lookFirst of [
      { type: 'mail', shard: 99 },
      { type: 'mail', shard: -1 },
      { type: 'mail', shard: 1.5 },
      { type: 'mail', shard: '3' },
      { shard: 3 },
      { type: '', shard: 3 },
      'mail#3',
      null,
    ]) {
      const parsed = workerStartEvent({ source: 'leasehold.kick', lookFirst });
      expect(parsed, JSON.stringify(lookFirst)).toEqual({ source: 'leasehold.kick', hints: {} });
    }
  });

  it("returns 'unknown' for junk, never throwing", () => {
    for (const junk of [null, undefined, 'leasehold.kick', 42, [], [{ source: 'leasehold.kick' }], true]) {
      expect(() => workerStartEvent(junk)).not.toThrow();
      expect(workerStartEvent(junk), JSON.stringify(junk)).toEqual({ source: 'unknown', hints: {} });
    }
  });
});
