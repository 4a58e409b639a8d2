import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { ValidationError } from '../shared/errors.js';
import { defineTask, NonRetryableError, type TaskContext } from '../shared/tasks/define.js';
import { RecordingMetrics } from '../shared/worker/metrics.js';
import { decideOutcome } from '../shared/worker/outcome.js';
import { startTestDynamo, type TestDynamo } from './support/test-dynamo.js';
import { createWorkerWorld, partitionedAfterFirstClaim, sleep, untilAborted } from './support/worker-world.js';

let server: TestDynamo;
beforeAll(async () => {
  server = await startTestDynamo();
});
afterAll(() => server.close());

describe('worker runtime', () => {
  it('runs a handler with its context and records the result; progress rides on the next renewal', async () => {
    const seen: Omit<TaskContext, 'signal' | 'heartbeat' | 'progress' | 'logger'>[] = [];
    const w = await createWorkerWorld(server.endpoint, [
      defineTask({
        name: 'greet',
        schema: z.object({ name: z.string() }),
        handler: async ({ name }, ctx) => {
          seen.push({ taskId: ctx.taskId, attempt: ctx.attempt, token: ctx.token });
          ctx.progress(0.5, 'half way');
          await sleep(450); // two heartbeats
          return { greeting: `hello ${name}` };
        },
      }),
    ]);
    const { task } = await w.queue.enqueue({ type: 'greet', payload: { name: 'Ada' }, owner: 'o' });
    let progressSeen: number | undefined;
    const poll = (async () => {
      for (let i = 0; i < 40 && progressSeen === undefined; i++) {
        await sleep(25);
        progressSeen = (await w.store.get({ id: task.id })).progress;
      }
    })();
    const worker = w.worker('w1');
    const summary = await worker.run();
    await poll;
    expect(summary).toMatchObject({ claimed: 1, stoppedBecause: 'idle', timersArmed: 0 });
    expect(seen).toEqual([{ taskId: task.id, attempt: 1, token: 1 }]);
    expect(progressSeen).toBe(0.5);
    expect(await w.store.get({ id: task.id })).toMatchObject({ status: 'SUCCESS', result: { greeting: 'hello Ada' }, progress: 0.5, progressNote: 'half way' });
    expect(worker.recorded.get('TasksSucceeded')).toBe(1);
    expect(worker.recorded.get('LeaseRenewalsOk')).toBeGreaterThanOrEqual(1);
    expect(worker.recorded.timings.get('QueueWait')).toHaveLength(1);
  });

  it('retries with backoff until SUCCESS, and ends FAILED with the last error when attempts run out', async () => {
    const attempts = new Map<string, number>();
    const w = await createWorkerWorld(server.endpoint, [
      defineTask({
        name: 'flaky',
        schema: z.object({ failTimes: z.number() }),
        maxAttempts: 3,
        handler: ({ failTimes }, ctx) => {
          attempts.set(ctx.taskId, ctx.attempt);
          if (ctx.attempt <= failTimes) throw new Error(`failure ${ctx.attempt}`);
          return 'ok';
        },
      }),
    ]);
    const succeeds = (await w.queue.enqueue({ type: 'flaky', payload: { failTimes: 2 }, owner: 'o' })).task;
    const exhausts = (await w.queue.enqueue({ type: 'flaky', payload: { failTimes: 5 }, owner: 'o' })).task;
    const worker = w.worker('w1');
    await worker.run();
    expect(await w.store.get({ id: succeeds.id })).toMatchObject({ status: 'SUCCESS', attempts: 3, result: 'ok', error: 'Error: failure 2' });
    expect(await w.store.get({ id: exhausts.id })).toMatchObject({ status: 'FAILED', attempts: 3, error: 'Error: failure 3' });
    expect(worker.recorded.get('TasksRetried')).toBe(4);
    expect(worker.recorded.get('DelayedPromoted')).toBe(4);
  });

  it('a NonRetryableError fails the task at once', async () => {
    const w = await createWorkerWorld(server.endpoint, [
      defineTask({ name: 'fatal', schema: z.unknown(), maxAttempts: 5, handler: () => { throw new NonRetryableError('no such account'); } }),
    ]);
    const { task } = await w.queue.enqueue({ type: 'fatal', owner: 'o' });
    await w.worker('w1').run();
    expect(await w.store.get({ id: task.id })).toMatchObject({ status: 'FAILED', attempts: 1, error: 'NonRetryableError: no such account' });
  });

  it('aborts a handler that exceeds its timeout and counts a failed attempt', async () => {
    const w = await createWorkerWorld(server.endpoint, [
      defineTask({ name: 'slow', schema: z.unknown(), timeoutMs: 300, maxAttempts: 1, handler: (_p, ctx) => untilAborted(ctx.signal) }),
    ]);
    const { task } = await w.queue.enqueue({ type: 'slow', owner: 'o' });
    await w.worker('w1').run();
    expect(await w.store.get({ id: task.id })).toMatchObject({ status: 'FAILED', attempts: 1, error: 'timed out after 300 ms' });
  });

  it('a cancel reaches the running handler within one heartbeat interval and the task ends CANCELLED', async () => {
    let abortedAt = 0;
    const w = await createWorkerWorld(server.endpoint, [
      defineTask({
        name: 'cancellable',
        schema: z.unknown(),
        handler: async (_p, ctx) => {
          ctx.signal.addEventListener('abort', () => (abortedAt = Date.now()));
          await untilAborted(ctx.signal);
        },
      }),
    ]);
    const { task } = await w.queue.enqueue({ type: 'cancellable', owner: 'o' });
    const worker = w.worker('w1');
    const run = worker.run();
    while ((await w.store.get({ id: task.id })).status !== 'RUNNING') await sleep(10);
    const requestedAt = Date.now();
    expect((await w.store.requestCancel({ id: task.id })).status).toBe('CANCEL_REQUESTED');
    await run;
    // One heartbeat interval, plus the renewal's own round trip on a loaded machine.
    expect(abortedAt - requestedAt).toBeLessThanOrEqual(w.config.heartbeatIntervalMs + 250);
    expect((await w.store.get({ id: task.id })).status).toBe('CANCELLED');
    expect(worker.recorded.get('TasksCancelled')).toBe(1);
  });

  it('a handler that outlives its lease is aborted, its late completion is refused, and the task ends once', async () => {
    let lateFinishes = 0;
    let takenOver!: () => void;
    const afterTakeover = new Promise<void>((resolve) => (takenOver = resolve));
    const w = await createWorkerWorld(server.endpoint, [
      defineTask({
        name: 'stubborn',
        schema: z.unknown(),
        maxAttempts: 3,
        handler: async (_p, ctx) => {
          if (ctx.attempt === 1) {
            await afterTakeover; // ignores ctx.signal on purpose, and finishes only after recovery took its task
            lateFinishes++;
          }
          return `attempt ${ctx.attempt}`;
        },
      }),
    ]);
    const { task } = await w.queue.enqueue({ type: 'stubborn', payload: 1, owner: 'o' });
    // Right after its claim the first worker is cut off from the table (a partition): renewals and
    // claims error; its handler's late completion gets through once the partition heals.
    const first = w.worker('cut-off', { store: partitionedAfterFirstClaim(w.peer()) });
    const firstRun = first.run({ idleStopMs: 100 });
    // Its lease runs out (waited on from the claim's own leaseUntil: a loaded machine claims late);
    // recovery (another process) requeues; a healthy worker takes it over.
    let leaseUntil: number | undefined;
    while (leaseUntil === undefined) leaseUntil = await sleep(10).then(async () => (await w.store.get({ id: task.id })).leaseUntil);
    await sleep(Math.max(0, leaseUntil + w.config.clockSkewMs + 50 - Date.now()));
    expect((await w.peer().recover()).requeued).toBe(1);
    // The cut-off worker's own clock says the lease ran out: its next heartbeat aborts the handler.
    while (first.recorded.get('LeasesLost') === 0) await sleep(10);
    takenOver();
    const second = w.worker('healthy');
    await Promise.all([firstRun, second.run()]);

    expect(lateFinishes).toBe(1);
    expect(first.recorded.get('LeasesLost')).toBe(1);
    expect(first.recorded.get('LateCompletionsRejected')).toBe(1);
    expect(first.recorded.get('TasksSucceeded')).toBe(0);
    expect(second.recorded.get('TasksSucceeded')).toBe(1);
    expect(await w.store.get({ id: task.id })).toMatchObject({ status: 'SUCCESS', result: 'attempt 2', attempts: 2, leaseToken: 2 });
  });

  it('an invocation near its deadline releases its tasks unspent; the next invocation finishes them; no timer stays armed', async () => {
    let runs = 0;
    const w = await createWorkerWorld(server.endpoint, [
      defineTask({
        name: 'long',
        schema: z.unknown(),
        timeoutMs: 1_000,
        handler: async (_p, ctx) => {
          runs++;
          if (runs === 1) await untilAborted(ctx.signal); // the first invocation runs out of time
          return 'finished';
        },
      }),
    ]);
    const { task } = await w.queue.enqueue({ type: 'long', owner: 'o' });
    // The invocation's time runs short while the task runs (the platform's clock, not ours, decides).
    let deadline = Date.now() + 60_000;
    const first = w.worker('invocation-1');
    const run = first.run({ remainingTimeMs: () => deadline - Date.now() });
    while (runs === 0) await sleep(5);
    deadline = Date.now() + 500;
    const summary = await run;
    expect(summary).toMatchObject({ claimed: 1, stoppedBecause: 'deadline', timersArmed: 0 });
    expect(first.timers.armed).toBe(0);
    expect(first.recorded.get('TasksReleased')).toBe(1);
    expect(first.recorded.flushes).toBe(1);
    expect(await w.store.get({ id: task.id })).toMatchObject({ status: 'QUEUED', attempts: 0 });

    const second = w.worker('invocation-2');
    expect(await second.run({ remainingTimeMs: () => 60_000 })).toMatchObject({ claimed: 1, timersArmed: 0 });
    expect(await w.store.get({ id: task.id })).toMatchObject({ status: 'SUCCESS', attempts: 1, result: 'finished' });
  });

  it('a handler that ignores the drain is abandoned: its lease is released and its late completion refused', async () => {
    const w = await createWorkerWorld(server.endpoint, [
      defineTask({ name: 'deaf', schema: z.unknown(), timeoutMs: 5_000, handler: () => sleep(900).then(() => 'late') }),
    ]);
    const { task } = await w.queue.enqueue({ type: 'deaf', owner: 'o' });
    let deadline = Date.now() + 60_000;
    const worker = w.worker('w1');
    const run = worker.run({ remainingTimeMs: () => deadline - Date.now() });
    while ((await w.store.get({ id: task.id })).status !== 'RUNNING') await sleep(5);
    deadline = Date.now() + 450;
    const summary = await run;
    expect(summary.timersArmed).toBe(0);
    expect(await w.store.get({ id: task.id })).toMatchObject({ status: 'QUEUED', attempts: 0 });
    await sleep(900);
    expect(worker.recorded.get('LateCompletionsRejected')).toBe(1);
    expect((await w.store.get({ id: task.id })).status).toBe('QUEUED');
  });

  it('measures event-loop lag when a CPU-bound handler blocks the heartbeat timer', async () => {
    const w = await createWorkerWorld(server.endpoint, [
      defineTask({
        name: 'cpu',
        schema: z.unknown(),
        handler: async (_p, ctx) => {
          const until = Date.now() + 600;
          while (Date.now() < until); // blocks the event loop for three heartbeat intervals
          await ctx.heartbeat(); // what a CPU-bound handler should do between chunks
          return 'done';
        },
      }),
    ]);
    const { task } = await w.queue.enqueue({ type: 'cpu', owner: 'o' });
    const summary = await w.worker('w1').run();
    expect(summary.maxEventLoopLagMs).toBeGreaterThanOrEqual(300);
    expect((await w.store.get({ id: task.id })).status).toBe('SUCCESS');
  });
});

describe('task definitions', () => {
  it('refuses unknown types and payloads that fail the schema at enqueue time, writing nothing', async () => {
    const w = await createWorkerWorld(server.endpoint, [defineTask({ name: 'typed', schema: z.object({ n: z.number().int() }), handler: () => 1 })]);
    const unknown = await w.queue.enqueue({ type: 'nope', owner: 'o' }).catch((e: unknown) => e);
    expect(unknown).toBeInstanceOf(ValidationError);
    expect((unknown as ValidationError).problems).toEqual([{ path: 'type', message: 'unknown task type "nope"; known types: typed' }]);
    const bad = (await w.queue.enqueue({ type: 'typed', payload: { n: 1.5 }, owner: 'o' }).catch((e: unknown) => e)) as ValidationError;
    expect(bad.problems.map((p) => p.path)).toEqual(['payload.n']);
    expect(await w.scanAll()).toEqual([]);
  });

  it('decides outcomes from how the handler ended and why it was aborted (pure)', () => {
    expect(decideOutcome({ kind: 'resolved', result: 1 }, 'lease-lost', 10)).toEqual({ write: 'complete', result: 1 });
    expect(decideOutcome({ kind: 'rejected', error: new Error('x'), retryable: true }, 'shutdown', 10)).toEqual({ write: 'release' });
    expect(decideOutcome({ kind: 'abandoned' }, 'cancel-requested', 10)).toEqual({ write: 'finish-cancel' });
    expect(decideOutcome({ kind: 'abandoned' }, 'timeout', 10)).toEqual({ write: 'fail', error: 'timed out after 10 ms', retryable: true });
    expect(decideOutcome({ kind: 'rejected', error: new TypeError('bad'), retryable: false }, undefined, 10)).toEqual({ write: 'fail', error: 'TypeError: bad', retryable: false });
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
