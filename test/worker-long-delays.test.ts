/**
 * Backoffs and timeouts past Node's timer limit: a setTimeout longer than
 * 2^31-1 ms fires after 1 ms, and a retry due in 34 days was re-promoted in a loop of writes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { ConfigError } from '../shared/errors.js';
import { defineConfig } from '../shared/config.js';
import { defineTask } from '../shared/tasks/define.js';
import { TaskRegistry } from '../shared/tasks/registry.js';
import { RecordingMetrics } from '../shared/metrics.js';
import { MAX_TIMER_DELAY_MS, TimerSet, type TimerHost } from '../shared/worker/timers.js';
import { Worker } from '../shared/worker/worker.js';
import { ManualClock } from './support/manual-clock.js';
import { startTestDynamo, type TestDynamo } from './support/test-dynamo.js';
import { createWorkerWorld, silentLogger, sleep } from './support/worker-world.js';

const DAY = 86_400_000;

/** Platform timers the test fires by hand: it sees every delay asked for, and waits for nothing. */
class HandTimers implements TimerHost {
  readonly pending = new Map<number, { fn: () => void; ms: number }>();
  readonly delays: number[] = [];
  private next = 0;
  setTimeout(fn: () => void, ms: number): unknown {
    this.delays.push(ms);
    this.pending.set(++this.next, { fn, ms });
    return this.next;
  }
  setInterval(fn: () => void, ms: number): unknown {
    return this.setTimeout(fn, ms);
  }
  clearTimeout(handle: unknown): void {
    this.pending.delete(handle as number);
  }
  /** Fires the one pending timer, as the platform would once its delay passed. */
  fire(): void {
    expect(this.pending.size).toBe(1);
    const [handle, { fn }] = [...this.pending][0]!;
    this.pending.delete(handle);
    fn();
  }
}

describe('TimerSet: delays past the platform limit', () => {
  it('waits out a 34-day delay in steps no longer than the limit, then runs the callback once', () => {
    const host = new HandTimers();
    const timers = new TimerSet(host);
    let runs = 0;
    timers.timeout(() => runs++, 34 * DAY);
    host.fire(); // the first step (24.8 days) ends: not yet
    expect(runs).toBe(0);
    expect(timers.armed).toBe(1);
    host.fire();
    expect(runs).toBe(1);
    expect(host.delays).toEqual([MAX_TIMER_DELAY_MS, 34 * DAY - MAX_TIMER_DELAY_MS]);
    expect(timers.armed).toBe(0);
  });

  it('passes a short delay through unchanged, and treats NaN or a negative delay as now', () => {
    const host = new HandTimers();
    const timers = new TimerSet(host);
    timers.timeout(() => undefined, 250);
    timers.timeout(() => undefined, Number.NaN);
    timers.timeout(() => undefined, -5);
    expect(host.delays).toEqual([250, 0, 0]);
  });

  it('cancels a long delay between its steps, and clearAll() clears whichever step is armed', () => {
    const host = new HandTimers();
    const timers = new TimerSet(host);
    let runs = 0;
    const long = timers.timeout(() => runs++, 60 * DAY);
    host.fire();
    timers.clear(long);
    expect([host.pending.size, timers.armed, runs]).toEqual([0, 0, 0]);

    timers.timeout(() => runs++, Number.POSITIVE_INFINITY); // never due: steps until cleared
    host.fire();
    host.fire();
    expect(host.delays.slice(-3)).toEqual([MAX_TIMER_DELAY_MS, MAX_TIMER_DELAY_MS, MAX_TIMER_DELAY_MS]);
    timers.clearAll();
    expect([host.pending.size, timers.armed, runs]).toEqual([0, 0, 0]);
  });

  it('holds an interval period at the limit instead of letting it fire every millisecond', () => {
    const host = new HandTimers();
    new TimerSet(host).interval(() => undefined, 40 * DAY);
    expect(host.delays).toEqual([MAX_TIMER_DELAY_MS]);
  });
});

describe('backoff bounds', () => {
  const config = defineConfig();
  const withBackoff = (maxMs: number) => [
    defineTask({
      name: 'monthly',
      schema: z.unknown(),
      backoff: { baseMs: 1_000, maxMs },
      handler: () => 'ok',
    }),
  ];

  it('a task type may back off for up to 7 days, and is refused with a clear error past that', () => {
    expect(() => new TaskRegistry(withBackoff(7 * DAY), config)).not.toThrow();
    let error: unknown;
    try {
      new TaskRegistry(withBackoff(60 * DAY), config);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).code).toBe('CONFIG_INVALID');
    expect((error as ConfigError).problems).toEqual([
      {
        path: 'task monthly.backoff.maxMs',
        message: 'must be at most 604800000 ms (7 days), like LEASEHOLD_BACKOFF_MAX_MS',
      },
    ]);
  });
});

let server: TestDynamo;
beforeAll(async () => {
  server = await startTestDynamo();
});
afterAll(() => server.close());

describe('a retry due further away than a timer can wait', () => {
  it('is promoted by one timer, not re-promoted in a loop of writes', async () => {
    // A 6-day backoff (the largest the type allows is 7) seen from a worker whose clock runs 30 days
    // behind the table's: the promotion is due about 34-36 days ahead by the worker's own clock.
    const w = await createWorkerWorld(server.endpoint, [
      defineTask({
        name: 'far',
        schema: z.unknown(),
        maxAttempts: 2,
        backoff: { baseMs: 6 * DAY, maxMs: 6 * DAY },
        handler: () => Promise.reject(new Error('upstream down')),
      }),
    ]);
    const store = w.peer();
    const promote = store.promote.bind(store);
    let promotions = 0;
    store.promote = (input) => {
      promotions++;
      return promote(input);
    };
    const overflows: string[] = [];
    const onWarning = (warning: Error) => {
      if (warning.name === 'TimeoutOverflowWarning') overflows.push(warning.message);
    };
    process.on('warning', onWarning);
    try {
      const { task } = await w.submitter.enqueue({ type: 'far', owner: 'o' });
      const metrics = new RecordingMetrics();
      const worker = new Worker({
        store,
        registry: w.registry,
        config: w.config,
        workerId: 'behind',
        logger: silentLogger(),
        metrics,
        clock: new ManualClock(Date.now() - 30 * DAY),
      });
      const stop = new AbortController();
      const run = worker.run({ stop: stop.signal, idleStopMs: Number.POSITIVE_INFINITY });
      while (metrics.get('TasksRetried') === 0) await sleep(10);
      // The broken timer fired every millisecond from here on; a working one stays quiet for days.
      await sleep(300);
      stop.abort();
      const summary = await run;
      expect(summary.timersArmed).toBe(0);
      expect(promotions).toBe(0);
      expect(overflows).toEqual([]);
      const stored = await w.store.get({ id: task.id });
      expect(stored).toMatchObject({ status: 'QUEUED', attempts: 1 });
      expect(stored.availableAt - Date.now()).toBeGreaterThan(2 * DAY);
    } finally {
      process.off('warning', onWarning);
    }
  });
});
