/**
 * A run's timekeeper (the fleet's reading one rides on the run of seat 0's holder; without one the run
 * keeps its own), its lookFirst hints and the retries it leaves waiting, on the in-memory store and fake timers with production settings
 * (poll 1 s, drain margin 20 s).
 */
import { describe, expect, it, vi } from 'vitest';
import * as z from 'zod';
import { systemClock } from '../shared/clock.js';
import { loadConfig, type LeaseholdConfig } from '../shared/config.js';
import type { ClaimState } from '../shared/store/claim-state.js';
import type { ClaimInput } from '../shared/task-inputs.js';
import { defineTask } from '../shared/tasks/define.js';
import { TaskRegistry } from '../shared/tasks/registry.js';
import type { RunOptions, RunSummary, RunTimekeeper } from '../shared/worker/worker.js';
import { FakeLeaseStore } from './support/fake-lease-store.js';
import { deferred } from './support/fleet-fakes.js';
import { fakeTimeWorker } from './support/worker-world.js';
import { advance, START, useFakeTime } from './support/fake-time.js';

useFakeTime();

const config: LeaseholdConfig = loadConfig({});
/** A Lambda invocation with 15 minutes from START. */
const fifteenMinutes = () => START + 15 * 60_000 - Date.now();

function runWorld(retryBackoffMs = 60_000) {
  const store = new FakeLeaseStore(systemClock(), config);
  const registry = new TaskRegistry(
    [
      // A short timeout: claimable until the drain margin (a 5-minute type stops claiming 5 minutes earlier).
      defineTask({ name: 'job', schema: z.unknown(), timeoutMs: 1_000, handler: () => 'done' }),
      defineTask({
        name: 'flaky',
        schema: z.unknown(),
        maxAttempts: 2,
        backoff: { baseMs: retryBackoffMs, maxMs: retryBackoffMs },
        handler: (_p, ctx) => (ctx.attempt === 1 ? Promise.reject(new Error('first')) : 'ok'),
      }),
    ],
    config,
  );
  const worker = fakeTimeWorker(store, registry, config);
  /** Starts a run; `ended` is when it resolved (virtual time), `summary` what it returned. */
  const start = (options: RunOptions) => {
    const run = { ended: undefined as number | undefined, summary: undefined as RunSummary | undefined };
    const promise = worker.run(options).then((s) => {
      run.ended = Date.now();
      run.summary = s;
      return s;
    });
    return Object.assign(run, { promise });
  };
  return { store, worker, start };
}

/** A timekeeper that says whatever `due` says, recording its calls (and the retries it is told of). */
function fakeRunTimekeeper(order: string[] = []) {
  const state = { due: true };
  const timekeeper = {
    start: vi.fn(() => void order.push('timekeeper.start')),
    stop: vi.fn(async () => void order.push('timekeeper.stop')),
    dueWithin: vi.fn((_ms: number) => state.due),
    expect: vi.fn((_id: string, _dueAt: number) => undefined),
    expectedWaiting: 0,
    promotedAt: 0,
  } satisfies RunTimekeeper;
  return { state, timekeeper };
}

describe('RunOptions.timekeeper', () => {
  it('a timekeeper that knows work due keeps the run up past idleStopMs; once it does not, the run stops idle', async () => {
    const idleStopMs = 5_000;
    // Without one the same run stops idle after idleStopMs.
    const baseline = runWorld().start({ idleStopMs, remainingTimeMs: fifteenMinutes });
    await advance(idleStopMs + config.pollIntervalMs);
    expect(baseline.summary?.stoppedBecause).toBe('idle');

    vi.setSystemTime(START);
    const { state, timekeeper } = fakeRunTimekeeper();
    const run = runWorld().start({ idleStopMs, remainingTimeMs: fifteenMinutes, timekeeper });
    await advance(0);
    // It asks about what falls due before the run must end (the drain margin before the deadline).
    expect(timekeeper.dueWithin).toHaveBeenCalled();
    expect(timekeeper.dueWithin.mock.calls[0]![0]).toBe(15 * 60_000 - config.drainMarginMs);
    await advance(30_000);
    expect(run.ended).toBeUndefined();
    state.due = false;
    const quietFrom = Date.now();
    await advance(idleStopMs + 2 * config.pollIntervalMs);
    expect(run.summary).toMatchObject({ stoppedBecause: 'idle', timersArmed: 0 });
    expect(run.ended! - quietFrom).toBeGreaterThanOrEqual(idleStopMs - config.pollIntervalMs);
    expect(run.ended! - quietFrom).toBeLessThanOrEqual(idleStopMs + config.pollIntervalMs);
  });

  it('a timekeeper does not keep the run past its deadline: it stops at the drain margin', async () => {
    const { timekeeper } = fakeRunTimekeeper();
    const deadline = START + 60_000;
    const run = runWorld().start({
      idleStopMs: 1_000,
      remainingTimeMs: () => deadline - Date.now(),
      timekeeper,
    });
    await advance(60_000);
    expect(run.summary).toMatchObject({ stoppedBecause: 'deadline' });
    expect(run.ended).toBe(deadline - config.drainMarginMs);
    expect(timekeeper.stop).toHaveBeenCalledTimes(1);
  });

  it('timekeeper.start is called once, after the first claim round; timekeeper.stop once; run() waits for it', async () => {
    const order: string[] = [];
    const { timekeeper } = fakeRunTimekeeper(order);
    const stopped = deferred();
    timekeeper.stop.mockImplementation(async () => {
      order.push('timekeeper.stop');
      await stopped.promise;
      order.push('timekeeper.stopped');
    });
    const w = runWorld();
    const claim = w.store.claim.bind(w.store);
    let rounds = 0;
    vi.spyOn(w.store, 'claim').mockImplementation(async (input: ClaimInput, memory: ClaimState) => {
      const round = ++rounds;
      if (round <= 2) order.push(`claim ${round}`);
      const answer = await claim(input, memory);
      if (round <= 2) order.push(`claim ${round} answered`);
      return answer;
    });
    w.store.add({ type: 'job' });
    const stop = new AbortController();
    const run = w.start({ idleStopMs: Number.POSITIVE_INFINITY, stop: stop.signal, timekeeper });
    await advance(3_000);
    expect(timekeeper.start).toHaveBeenCalledTimes(1);
    expect(timekeeper.stop).not.toHaveBeenCalled();
    stop.abort();
    await advance(5_000);
    // The timekeeper is told to stop, and the run has not returned while it is still stopping.
    expect(timekeeper.stop).toHaveBeenCalledTimes(1);
    expect(run.ended).toBeUndefined();
    stopped.resolve();
    await run.promise;
    order.push('run returned');
    // Its reads must not slow the claim a kick is waiting for: it starts once the first round answered.
    expect(order).toEqual([
      'claim 1',
      'claim 1 answered',
      'timekeeper.start',
      'claim 2',
      'claim 2 answered',
      'timekeeper.stop',
      'timekeeper.stopped',
      'run returned',
    ]);
    expect(timekeeper.start).toHaveBeenCalledTimes(1);
    expect(timekeeper.stop).toHaveBeenCalledTimes(1);
    expect(run.summary).toMatchObject({ stoppedBecause: 'stop-signal', claimed: 1, timersArmed: 0 });
  });

  it("hands the retries its tasks schedule to the source's timekeeper, which promotes them (the run does not)", async () => {
    const { timekeeper } = fakeRunTimekeeper();
    const w = runWorld(2_000);
    const task = w.store.add({ type: 'flaky' });
    timekeeper.dueWithin.mockReturnValue(false);
    const run = w.start({ idleStopMs: 5_000, remainingTimeMs: fifteenMinutes, timekeeper });
    await advance(15_000);
    const backedOff = w.store.get(task.id);
    expect(timekeeper.expect.mock.calls).toEqual([[task.id, backedOff.availableAt]]);
    // Nobody else promoted it: still delayed, one attempt spent.
    expect(backedOff).toMatchObject({ status: 'QUEUED', attempts: 1 });
    expect(run.summary).toMatchObject({ stoppedBecause: 'idle', claimed: 1 });
  });

  it('a run that ends before its first claim round neither starts nor stops the timekeeper', async () => {
    const { timekeeper } = fakeRunTimekeeper();
    const stop = new AbortController();
    stop.abort();
    const run = runWorld().start({ stop: stop.signal, timekeeper });
    await advance(0);
    expect(run.summary).toMatchObject({ stoppedBecause: 'stop-signal', claimed: 0 });
    expect(timekeeper.start).not.toHaveBeenCalled();
    expect(timekeeper.stop).not.toHaveBeenCalled();
  });
});

describe('RunOptions.lookFirst', () => {
  // The fake store cannot tell which partition a claim reads first; what it can see is the claim
  // memory each round is given, whose hints the DynamoDB store reads first (shared/store/claim.ts).
  it('the first claim round carries the hints, later rounds none', async () => {
    const w = runWorld();
    const hintsPerRound: { type: string; shard: number }[][] = [];
    const claim = w.store.claim.bind(w.store);
    vi.spyOn(w.store, 'claim').mockImplementation((input: ClaimInput, memory: ClaimState) => {
      hintsPerRound.push(memory.takeHints());
      return claim(input, memory);
    });
    const hints = [
      { type: 'job', shard: 5 },
      { type: 'flaky', shard: 11 },
    ];
    const run = w.start({ idleStopMs: 2_500, lookFirst: hints });
    await advance(5_000);
    expect(run.summary?.stoppedBecause).toBe('idle');
    expect(hintsPerRound.length).toBeGreaterThanOrEqual(2);
    expect(hintsPerRound[0]).toEqual(hints);
    expect(hintsPerRound.slice(1)).toEqual(hintsPerRound.slice(1).map(() => []));
  });
});

describe('RunSummary.retriesWaiting', () => {
  it('counts a retry this run scheduled that is not yet due when it returns', async () => {
    const w = runWorld(60_000);
    const task = w.store.add({ type: 'flaky' });
    const run = w.start({ idleStopMs: 5_000 });
    await advance(10_000);
    expect(run.summary).toMatchObject({ stoppedBecause: 'idle', claimed: 1, retriesWaiting: 1 });
    expect(w.store.get(task.id)).toMatchObject({ status: 'QUEUED', attempts: 1 });
    expect(w.store.get(task.id).availableAt).toBeGreaterThan(run.ended!);
  });

  it('a retry promoted and run within the run is not counted', async () => {
    const w = runWorld(2_000);
    const task = w.store.add({ type: 'flaky' });
    const run = w.start({ idleStopMs: 5_000 });
    await advance(15_000);
    expect(run.summary).toMatchObject({ stoppedBecause: 'idle', claimed: 2, retriesWaiting: 0 });
    expect(w.store.get(task.id).status).toBe('SUCCESS');
  });
});
