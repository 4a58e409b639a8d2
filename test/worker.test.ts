/**
 * The worker's behaviour (admission, drain, deadline, lease lost, cancel, abandonment, promotion)
 * against an in-memory LeaseStore on fake timers: production settings (60 s leases, 10 s heartbeats),
 * virtual time, no real sleep. The DynamoDB store has its own suites on the emulators.
 */
import { describe, expect, it, vi } from 'vitest';
import * as z from 'zod';
import { systemClock } from '../shared/clock.js';
import { loadConfig, type LeaseholdConfig } from '../shared/config.js';
import { ValidationError } from '../shared/errors.js';
import type { LeaseEventMap } from '../shared/events.js';
import {
  defineTask,
  NonRetryableError,
  type TaskContext,
  type TaskDefinition,
} from '../shared/tasks/define.js';
import { TaskRegistry } from '../shared/tasks/registry.js';
import { TaskSubmitter } from '../shared/tasks/task-submitter.js';
import { RecordingMetrics } from '../shared/metrics.js';
import { decideOutcome, TaskAbortedError } from '../shared/worker/outcome.js';
import { Worker, type RunOptions, type RunSummary } from '../shared/worker/worker.js';
import { FakeLeaseStore } from './support/fake-lease-store.js';
import { silentLogger, untilAborted } from './support/worker-world.js';
import { START, useFakeTime } from './support/fake-time.js';

useFakeTime();

/** The production defaults: lease 60 s, heartbeat 10 s, poll 1 s, idle stop 10 s, drain margin 20 s. */
const config: LeaseholdConfig = loadConfig({});

interface World {
  store: FakeLeaseStore;
  worker: Worker;
  metrics: RecordingMetrics;
  /** Runs the worker on virtual time until it returns, stepping the clock `stepMs` at a time. */
  run(options?: RunOptions, stepMs?: number): Promise<RunSummary>;
  /** Advances virtual time (timers fire, promises settle between them). */
  advance(ms: number): Promise<void>;
  events<K extends keyof LeaseEventMap>(name: K): LeaseEventMap[K][];
}

function world(
  definitions: TaskDefinition[],
  options: { monotonic?: () => number; overrides?: Partial<LeaseholdConfig> } = {},
): World {
  const settings = { ...config, ...options.overrides };
  const store = new FakeLeaseStore(systemClock(), settings);
  const registry = new TaskRegistry(definitions, settings);
  const metrics = new RecordingMetrics();
  const seen = new Map<string, unknown[]>();
  const worker = new Worker({
    store,
    registry,
    config: settings,
    workerId: 'w1',
    events: store.events,
    logger: silentLogger(),
    metrics,
    monotonic: options.monotonic ?? (() => Date.now()),
  });
  return {
    store,
    worker,
    metrics,
    advance: async (ms) => void (await vi.advanceTimersByTimeAsync(ms)),
    run: async (runOptions = {}, stepMs = 1_000) => {
      let summary: RunSummary | undefined;
      const running = worker.run(runOptions).then((s) => (summary = s));
      // Ten virtual hours at most: a worker that never stops fails the test instead of hanging it.
      for (let i = 0; summary === undefined && i < 36_000_000 / stepMs; i++)
        await vi.advanceTimersByTimeAsync(stepMs);
      await running;
      return summary!;
    },
    events: <K extends keyof LeaseEventMap>(name: K) => {
      if (!seen.has(name)) {
        const list: unknown[] = [];
        seen.set(name, list);
        store.events.on(name, (e) => list.push(e));
      }
      return seen.get(name) as LeaseEventMap[K][];
    },
  };
}

describe('worker runtime (fake store, fake timers)', () => {
  it('runs a handler with its context and records the result; progress rides on the next renewal', async () => {
    const seen: Pick<TaskContext, 'taskId' | 'attempt' | 'token'>[] = [];
    const w = world([
      defineTask({
        name: 'greet',
        schema: z.object({ name: z.string() }),
        handler: async ({ name }, ctx) => {
          seen.push({ taskId: ctx.taskId, attempt: ctx.attempt, token: ctx.token });
          ctx.progress(0.5, 'half way');
          await ctx.sleep(25_000); // two heartbeats
          return { greeting: `hello ${name}` };
        },
      }),
    ]);
    const task = w.store.add({ type: 'greet', payload: { name: 'Ada' } });
    const renewals = w.events('renew');
    const summary = await w.run();
    expect(summary).toMatchObject({ claimed: 1, stoppedBecause: 'idle', timersArmed: 0, heartbeatRounds: 2 });
    expect(seen).toEqual([{ taskId: task.id, attempt: 1, token: 1 }]);
    expect(renewals.map((r) => r.outcome)).toEqual(['renewed', 'renewed']);
    expect(w.store.get(task.id)).toMatchObject({
      status: 'SUCCESS',
      result: { greeting: 'hello Ada' },
      progress: 0.5,
      progressNote: 'half way',
    });
    expect(w.metrics.get('TasksSucceeded')).toBe(1);
    expect(w.metrics.get('LeaseRenewalsOk')).toBe(2);
    expect(w.metrics.timings.get('QueueWait')).toEqual([0]);
    expect(w.metrics.timings.get('TaskDuration')).toEqual([25_000]);
  });

  it('retries with backoff until SUCCESS, the worker promoting its own retries, and ends FAILED with the last error when attempts run out', async () => {
    const w = world([
      defineTask({
        name: 'flaky',
        schema: z.object({ failTimes: z.number() }),
        maxAttempts: 3,
        backoff: { baseMs: 2_000, maxMs: 5_000 },
        handler: ({ failTimes }, ctx) => {
          if (ctx.attempt <= failTimes) throw new Error(`failure ${ctx.attempt}`);
          return 'ok';
        },
      }),
    ]);
    const recovers = w.store.add({ type: 'flaky', payload: { failTimes: 2 } });
    const exhausts = w.store.add({ type: 'flaky', payload: { failTimes: 5 } });
    const summary = await w.run({}, 100);
    expect(summary.claimed).toBe(6);
    expect(w.store.get(recovers.id)).toMatchObject({ status: 'SUCCESS', attempts: 3, result: 'ok' });
    expect(w.store.get(exhausts.id)).toMatchObject({
      status: 'FAILED',
      attempts: 3,
      error: 'Error: failure 3',
    });
    expect(w.store.calls.filter((c) => c.op === 'promote')).toHaveLength(4);
    expect(w.metrics.get('DelayedPromoted')).toBe(4);
    expect(w.metrics.get('TasksRetried')).toBe(4);
  });

  it('a NonRetryableError fails the task at once; "task:finished" tells a subscriber it failed for good', async () => {
    const w = world([
      defineTask({
        name: 'fatal',
        schema: z.unknown(),
        handler: () => Promise.reject(new NonRetryableError('bad input')),
      }),
    ]);
    const finished = w.events('task:finished');
    const task = w.store.add({ type: 'fatal' });
    await w.run();
    expect(w.store.get(task.id)).toMatchObject({
      status: 'FAILED',
      attempts: 1,
      error: 'NonRetryableError: bad input',
    });
    expect(finished).toEqual([
      expect.objectContaining({
        taskId: task.id,
        type: 'fatal',
        status: 'FAILED',
        by: 'worker',
        error: 'NonRetryableError: bad input',
      }),
    ]);
  });

  it('aborts a handler that exceeds its timeout and counts a failed attempt', async () => {
    let reason: unknown;
    const w = world([
      defineTask({
        name: 'slow',
        schema: z.unknown(),
        timeoutMs: 30_000,
        maxAttempts: 1,
        handler: (_p, ctx) => untilAborted(ctx.signal).catch((e: unknown) => Promise.reject((reason = e))),
      }),
    ]);
    const task = w.store.add({ type: 'slow' });
    await w.run();
    expect(reason).toBeInstanceOf(TaskAbortedError);
    expect((reason as TaskAbortedError).reason).toBe('timeout');
    expect(w.store.get(task.id)).toMatchObject({ status: 'FAILED', error: 'timed out after 30000 ms' });
  });

  it('a cancel reaches the running handler within one heartbeat interval, ctx.sleep throws the abort, and the task ends CANCELLED', async () => {
    let abortedAt: number | undefined;
    let thrown: unknown;
    const w = world([
      defineTask({
        name: 'long',
        schema: z.unknown(),
        handler: async (_p, ctx) => {
          try {
            await ctx.sleep(3_600_000);
          } catch (error) {
            abortedAt = Date.now();
            thrown = error;
            throw error;
          }
        },
      }),
    ]);
    const task = w.store.add({ type: 'long' });
    const run = w.worker.run({ idleStopMs: 1_000 });
    await w.advance(3_000);
    w.store.requestCancel(task.id);
    const requestedAt = Date.now();
    await w.advance(config.heartbeatIntervalMs * 2);
    const summary = await run;
    expect(summary.stoppedBecause).toBe('idle');
    expect(abortedAt! - requestedAt).toBeLessThanOrEqual(config.heartbeatIntervalMs);
    expect(thrown).toMatchObject({ code: 'TASK_ABORTED', reason: 'cancel-requested' });
    expect(w.store.get(task.id)).toMatchObject({ status: 'CANCELLED' });
    expect(w.metrics.get('TasksCancelled')).toBe(1);
  });

  it('a handler whose lease is taken over is aborted at the next renewal, and its completion is refused', async () => {
    const w = world([
      defineTask({
        name: 'work',
        schema: z.unknown(),
        handler: async (_p, ctx) => {
          await ctx.sleep(15_000).catch(() => undefined); // finishes anyway: its completion must be refused
          return 'late';
        },
      }),
    ]);
    const task = w.store.add({ type: 'work' });
    const lost = w.events('lease:lost');
    const answers = w.events('write:answered');
    const run = w.run();
    await w.advance(5_000);
    w.store.takeOver(task.id);
    await run;
    expect(lost).toEqual([{ taskId: task.id, token: 1 }]);
    expect(answers).toEqual([expect.objectContaining({ write: 'complete', outcome: 'refused' })]);
    expect(w.store.get(task.id)).toMatchObject({
      status: 'RUNNING',
      leaseOwner: 'other-worker',
      leaseToken: 2,
    });
    expect(w.metrics.get('LeasesLost')).toBe(1);
    expect(w.metrics.get('LateCompletionsRejected')).toBe(1);
  });

  it('renewals that keep failing abort the handler once its own view of the lease runs out, not before', async () => {
    let abortedAt: number | undefined;
    const w = world([
      defineTask({
        name: 'cut-off',
        schema: z.unknown(),
        maxAttempts: 1,
        handler: async (_p, ctx) => {
          await untilAborted(ctx.signal).catch((e: unknown) => {
            abortedAt = Date.now();
            throw e;
          });
        },
      }),
    ]);
    const task = w.store.add({ type: 'cut-off', maxAttempts: 1 });
    w.store.renewFault = new Error('network partition');
    const lost = w.events('lease:lost');
    await w.run();
    expect(lost).toHaveLength(1);
    const claimedAt = START;
    expect(abortedAt).toBeGreaterThanOrEqual(claimedAt + config.leaseTimeoutMs);
    expect(abortedAt).toBeLessThanOrEqual(claimedAt + config.leaseTimeoutMs + config.heartbeatIntervalMs);
    // The failure write still carries its token: here nobody took over, so it applies.
    expect(w.store.get(task.id)).toMatchObject({ status: 'FAILED' });
  });

  it('an invocation near its deadline releases its tasks unspent; no timer stays armed', async () => {
    const w = world([
      defineTask({
        name: 'slow',
        schema: z.unknown(),
        timeoutMs: 60_000,
        handler: (_p, ctx) => untilAborted(ctx.signal),
      }),
    ]);
    const task = w.store.add({ type: 'slow' });
    // Claimed with time to spare; then the invocation's time runs short (as when a later claim of a
    // shorter type started it near its end): the drain margin begins at once.
    let deadline = Date.now() + 600_000;
    setTimeout(() => (deadline = Date.now() + config.drainMarginMs), 5_000);
    const summary = await w.run({ remainingTimeMs: () => deadline - Date.now() });
    expect(summary).toMatchObject({ claimed: 1, stoppedBecause: 'deadline', timersArmed: 0 });
    expect(w.worker.timers.armed).toBe(0);
    expect(w.store.get(task.id)).toMatchObject({ status: 'QUEUED', attempts: 0 });
    expect(w.metrics.get('TasksReleased')).toBe(1);
    // The drain began at the margin, not at the deadline.
    expect(Date.now()).toBeLessThanOrEqual(deadline);
  });

  it('runs one run() at a time: a second call while one runs is refused, and the worker runs again after', async () => {
    const w = world([defineTask({ name: 'x', schema: z.unknown(), handler: () => 'ok' })]);
    const first = w.run();
    await expect(w.worker.run()).rejects.toMatchObject({ code: 'WORKER_BUSY' });
    expect((await first).stoppedBecause).toBe('idle');
    w.store.add({ type: 'x' });
    expect((await w.run()).claimed).toBe(1);
  });

  it('claims no type whose timeout no longer fits the invocation', async () => {
    const w = world([
      defineTask({ name: 'long', schema: z.unknown(), timeoutMs: 120_000, handler: () => 'x' }),
    ]);
    w.store.add({ type: 'long' });
    const summary = await w.run({ remainingTimeMs: () => 100_000 });
    expect(summary).toMatchObject({ claimed: 0, stoppedBecause: 'deadline' });
    expect(w.store.calls).toEqual([]);
  });

  it('a handler that ignores the drain is abandoned: its lease is released and its late completion refused', async () => {
    const w = world([
      defineTask({
        name: 'deaf',
        schema: z.unknown(),
        handler: () => new Promise((resolve) => setTimeout(() => resolve('late'), 60_000)),
      }),
    ]);
    const task = w.store.add({ type: 'deaf' });
    const stop = new AbortController();
    const answers = w.events('write:answered');
    const run = w.worker.run({ stop: stop.signal, idleStopMs: Number.POSITIVE_INFINITY });
    await w.advance(2_000);
    stop.abort();
    await w.advance(config.drainMarginMs);
    expect((await run).stoppedBecause).toBe('stop-signal');
    expect(w.store.get(task.id)).toMatchObject({ status: 'QUEUED', attempts: 0 });
    await w.advance(60_000);
    expect(answers.map((a) => `${a.write}:${a.outcome}`)).toEqual(['release:ok', 'complete:refused']);
    expect(w.store.get(task.id).status).toBe('QUEUED');
  });

  it('measures event-loop lag when a handler blocks the heartbeat timer', async () => {
    let blocked = 0;
    const w = world(
      [
        defineTask({
          name: 'cpu',
          schema: z.unknown(),
          handler: async (_p, ctx) => {
            await ctx.sleep(5_000);
            blocked = 15_000; // the next tick looks 15 s late, as after a CPU-bound stretch
            await ctx.sleep(30_000);
          },
        }),
      ],
      { monotonic: () => Date.now() + blocked },
    );
    w.store.add({ type: 'cpu' });
    const summary = await w.run();
    expect(summary.maxEventLoopLagMs).toBe(15_000);
    expect(w.metrics.timings.get('EventLoopLag')).toContain(15_000);
  });

  it('hands the previous attempt its last progress report (a checkpoint), written with the failure', async () => {
    const previous: (TaskContext['previous'] | undefined)[] = [];
    const w = world([
      defineTask({
        name: 'pages',
        schema: z.unknown(),
        maxAttempts: 2,
        backoff: { baseMs: 1_000, maxMs: 1_000 },
        handler: (_p, ctx) => {
          previous.push(ctx.previous);
          if (ctx.attempt === 1) {
            ctx.progress(0.4, 'page 40');
            throw new Error('throttled at page 41');
          }
          return 'done';
        },
      }),
    ]);
    const task = w.store.add({ type: 'pages' });
    await w.run({}, 100);
    expect(previous).toEqual([undefined, { progress: 0.4, note: 'page 40' }]);
    expect(w.store.get(task.id)).toMatchObject({ status: 'SUCCESS', attempts: 2 });
  });

  it('stays up while a retry of its own is due within the idle window, and stops idle after it', async () => {
    const w = world([
      defineTask({
        name: 'once',
        schema: z.unknown(),
        maxAttempts: 2,
        backoff: { baseMs: 8_000, maxMs: 8_000 },
        handler: (_p, ctx) => (ctx.attempt === 1 ? Promise.reject(new Error('first')) : 'ok'),
      }),
    ]);
    const task = w.store.add({ type: 'once' });
    const summary = await w.run({ idleStopMs: 5_000 }, 100);
    expect(summary).toMatchObject({ claimed: 2, stoppedBecause: 'idle' });
    expect(w.store.get(task.id).status).toBe('SUCCESS');
  });

  it('an outcome write in flight is not raced by renewals: a lost answer from a round does not abort the finished handler', async () => {
    let open!: () => void;
    const w = world([defineTask({ name: 'quick', schema: z.unknown(), handler: () => 'done' })]);
    const task = w.store.add({ type: 'quick' });
    w.store.writeGate = new Promise((resolve) => (open = resolve));
    const lost = w.events('lease:lost');
    const run = w.run();
    await w.advance(config.heartbeatIntervalMs * 3);
    w.store.takeOver(task.id); // renewals would now answer 'lost'
    await w.advance(config.heartbeatIntervalMs * 2);
    open();
    await run;
    expect(lost).toEqual([]);
    expect(w.store.calls.filter((c) => c.op === 'renew')).toEqual([]);
  });
});

describe('outcomes the store refuses as input', () => {
  it('a result the store refuses is recorded as a failed attempt with the reason, not left RUNNING', async () => {
    const w = world([defineTask({ name: 'big', schema: z.unknown(), handler: () => 'x'.repeat(10) })]);
    const task = w.store.add({ type: 'big', maxAttempts: 3 });
    w.store.complete = async () => {
      throw new ValidationError('complete', [{ path: 'result', message: 'must be at most 64 KB as JSON' }]);
    };
    await w.run();
    expect(w.store.get(task.id)).toMatchObject({
      status: 'FAILED',
      attempts: 1,
      error: 'ValidationError: Invalid input to complete: result: must be at most 64 KB as JSON',
    });
  });
});

describe('task definitions', () => {
  it('refuses unknown types and payloads that fail the schema at enqueue time, writing nothing', async () => {
    const registry = new TaskRegistry(
      [defineTask({ name: 'typed', schema: z.object({ n: z.number().int() }), handler: () => 1 })],
      config,
    );
    const enqueued: unknown[] = [];
    const queue = new TaskSubmitter(
      { enqueue: async (input) => (enqueued.push(input), Promise.reject(new Error('unreachable'))) },
      registry,
      config,
    );
    const unknown = await queue.enqueue({ type: 'nope', owner: 'o' }).catch((e: unknown) => e);
    expect(unknown).toBeInstanceOf(ValidationError);
    expect((unknown as ValidationError).problems).toEqual([
      { path: 'type', message: 'unknown task type "nope"; known types: typed' },
    ]);
    const bad = (await queue
      .enqueue({ type: 'typed', payload: { n: 1.5 }, owner: 'o' })
      .catch((e: unknown) => e)) as ValidationError;
    expect(bad.problems.map((p) => p.path)).toEqual(['payload.n']);
    expect(enqueued).toEqual([]);
  });

  it('decides outcomes from how the handler ended and why it was aborted (pure)', () => {
    expect(decideOutcome({ kind: 'resolved', result: 1 }, 'lease-lost', 10)).toEqual({
      write: 'complete',
      result: 1,
    });
    expect(
      decideOutcome({ kind: 'rejected', error: new Error('x'), retryable: true }, 'shutdown', 10),
    ).toEqual({ write: 'release' });
    expect(decideOutcome({ kind: 'abandoned' }, 'cancel-requested', 10)).toEqual({ write: 'finish-cancel' });
    // A rejection without a message still gives the store a reason to record.
    expect(decideOutcome({ kind: 'rejected', error: '', retryable: true }, undefined, 10)).toEqual({
      write: 'fail',
      error: 'the handler failed without a message',
      retryable: true,
    });
    expect(decideOutcome({ kind: 'abandoned' }, 'timeout', 10)).toEqual({
      write: 'fail',
      error: 'timed out after 10 ms',
      retryable: true,
    });
    expect(
      decideOutcome({ kind: 'rejected', error: new TypeError('bad'), retryable: false }, undefined, 10),
    ).toEqual({ write: 'fail', error: 'TypeError: bad', retryable: false });
  });
});

describe('recorded metrics (the local stack keeps them for days)', () => {
  it('keeps every count but only the latest 1,000 timings of each name', () => {
    const metrics = new RecordingMetrics();
    for (let i = 0; i < 2_500; i++) {
      metrics.count('TasksSucceeded');
      metrics.timing('QueueWait', i);
    }
    expect(metrics.get('TasksSucceeded')).toBe(2_500);
    const waits = metrics.timings.get('QueueWait')!;
    expect(waits).toHaveLength(1_000);
    expect([waits[0], waits.at(-1)]).toEqual([1_500, 2_499]);
  });
});
