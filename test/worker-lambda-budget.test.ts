/** The worker shaped as the deployed Lambda runs it: remaining time from the synthesized timeout. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { ValidationError } from '../shared/errors.js';
import { defineTask } from '../shared/tasks/define.js';
import { sizeFunctions } from '../cdk/sizing.js';
import { startTestDynamo, type TestDynamo } from './support/test-dynamo.js';
import { createWorkerWorld, silentLogger } from './support/worker-world.js';
import { RecordingMetrics } from '../shared/metrics.js';
import { Worker } from '../shared/worker/worker.js';

let server: TestDynamo;
beforeAll(async () => {
  server = await startTestDynamo();
});
afterAll(() => server.close());

describe('a worker invocation sized as the stack sizes it', () => {
  it('claims a type without a timeout of its own at once (before the fix it returned in milliseconds with nothing claimed)', async () => {
    const w = await createWorkerWorld(server.endpoint, [
      defineTask({ name: 'demo.echo', schema: z.unknown(), handler: (p) => p }),
    ]);
    const { task } = await w.submitter.enqueue({ type: 'demo.echo', payload: 1, owner: 'o' });
    // getRemainingTimeInMillis() starts just below the function's timeout: 30 ms of init already spent.
    const invocationEnd = Date.now() + sizeFunctions(w.config).workerTimeoutMs - 30;
    // A generous idle stop: on a loaded machine the first polls may find the task's shard after 300 ms.
    const summary = await w
      .worker('lambda-1')
      .run({ remainingTimeMs: () => invocationEnd - Date.now(), idleStopMs: 2_000 });
    expect(summary).toMatchObject({ claimed: 1, stoppedBecause: 'idle' });
    expect(await w.store.get({ id: task.id })).toMatchObject({ status: 'SUCCESS', attempts: 1 });
  });

  it('refuses at enqueue a task timeout above its type timeout, and runs one written before that rule under the type timeout instead of releasing it in a loop', async () => {
    const w = await createWorkerWorld(server.endpoint, [
      defineTask({ name: 'short', schema: z.unknown(), timeoutMs: 1_000, handler: () => 'done' }),
    ]);
    await expect(
      w.submitter.enqueue({ type: 'short', owner: 'o', payload: 1, timeoutMs: 10_000 }),
    ).rejects.toThrow(ValidationError);
    await expect(
      w.submitter.enqueue({ type: 'short', owner: 'o', payload: 1, timeoutMs: 10_000 }),
    ).rejects.toThrow(/at most 1000 ms, the timeout of task type short/);
    expect(await w.scanAll()).toEqual([]);

    // A task stored with a longer timeout (an older client, a direct write): the item as enqueue writes it.
    const { task } = await w.submitter.enqueue({ type: 'short', owner: 'o', payload: 2, timeoutMs: 1_000 });
    const [item] = (await w.scanAll()).filter((i) => i.pk === `TASK#${task.id}`);
    await w.doc.send(new PutCommand({ TableName: w.config.tableName, Item: { ...item, timeoutMs: 10_000 } }));
    const invocationEnd = Date.now() + 5_000; // less than the task's own 10 s + drain, more than the type's 1 s + drain
    const worker = w.worker('lambda-2');
    const summary = await worker.run({
      remainingTimeMs: () => invocationEnd - Date.now(),
      idleStopMs: 2_000,
    });
    expect(summary).toMatchObject({ claimed: 1 });
    expect(worker.recorded.get('TasksReleased')).toBe(0);
    expect(await w.store.get({ id: task.id })).toMatchObject({
      status: 'SUCCESS',
      attempts: 1,
      result: 'done',
    });
  });
});

describe('a task asking for the longest timeout the API allows', () => {
  it('is claimed once and runs on a Lambda-shaped invocation, instead of being claimed and released in a loop', async () => {
    const w = await createWorkerWorld(server.endpoint, [
      defineTask({ name: 'demo.echo', schema: z.unknown(), handler: (p) => p }),
    ]);
    // The API's bound: timeoutSeconds * 1000 <= LEASEHOLD_MAX_EXECUTION_MS, for a type without a timeout of its own.
    await expect(
      w.submitter.enqueue({
        type: 'demo.echo',
        owner: 'o',
        payload: 0,
        timeoutMs: w.config.maxExecutionMs + 1,
      }),
    ).rejects.toThrow(ValidationError);
    const { task } = await w.submitter.enqueue({
      type: 'demo.echo',
      owner: 'o',
      payload: 1,
      timeoutMs: w.config.maxExecutionMs,
    });
    const invocationEnd = Date.now() + sizeFunctions(w.config).workerTimeoutMs - 30;
    const worker = w.worker('lambda-3');
    const summary = await worker.run({
      remainingTimeMs: () => invocationEnd - Date.now(),
      idleStopMs: 2_000,
    });
    expect(summary).toMatchObject({ claimed: 1, stoppedBecause: 'idle' });
    expect(worker.recorded.get('TasksReleased')).toBe(0);
    expect(await w.store.get({ id: task.id })).toMatchObject({
      status: 'SUCCESS',
      attempts: 1,
      leaseToken: 1,
    });
  });

  it('is left alone by an invocation too close to its end to finish it: no claim, no release, no spin', async () => {
    const w = await createWorkerWorld(server.endpoint, [
      defineTask({ name: 'demo.echo', schema: z.unknown(), handler: (p) => p }),
    ]);
    const { task } = await w.submitter.enqueue({
      type: 'demo.echo',
      owner: 'o',
      payload: 1,
      timeoutMs: w.config.maxExecutionMs,
    });
    // One second short of what the task's timeout plus the drain margin needs, for the whole run.
    const invocationEnd = Date.now() + w.config.maxExecutionMs + w.config.drainMarginMs - 1_000;
    const worker = w.worker('lambda-late');
    const summary = await worker.run({
      remainingTimeMs: () => invocationEnd - Date.now(),
      idleStopMs: 2_000,
    });
    expect(summary).toMatchObject({ claimed: 0, stoppedBecause: 'deadline' });
    expect(worker.recorded.get('TasksReleased')).toBe(0);
    expect(await w.store.get({ id: task.id })).toMatchObject({
      status: 'QUEUED',
      attempts: 0,
      leaseToken: 0,
    });
  });
});

describe('metrics of a long invocation', () => {
  it('are sent while the worker runs, not only when it returns', async () => {
    const w = await createWorkerWorld(server.endpoint, [
      defineTask({
        name: 'slow',
        schema: z.unknown(),
        handler: () => new Promise((r) => setTimeout(() => r('done'), 1_200)),
      }),
    ]);
    await w.submitter.enqueue({ type: 'slow', owner: 'o', payload: 1 });
    const recorded = new RecordingMetrics();
    // The heartbeat (200 ms here) sends the figures once the flush interval has passed.
    const worker = new Worker({
      store: w.peer(),
      registry: w.registry,
      config: w.config,
      workerId: 'long',
      logger: silentLogger(),
      metrics: recorded,
      metricsFlushIntervalMs: 300,
    });
    let flushesWhileRunning = 0;
    const run = worker.run();
    while (worker.running === 0) await new Promise((r) => setTimeout(r, 10));
    while (worker.running > 0) {
      flushesWhileRunning = recorded.flushes;
      await new Promise((r) => setTimeout(r, 20));
    }
    await run;
    expect(flushesWhileRunning).toBeGreaterThanOrEqual(2);
    expect(recorded.flushes).toBeGreaterThan(flushesWhileRunning);
  });
});

describe('a dedicated worker pool (LEASEHOLD_WORKER_TYPES)', () => {
  it('serves only its types, and refuses a type the catalog does not have', async () => {
    const defs = [
      defineTask({ name: 'mine', schema: z.unknown(), handler: () => 'mine' }),
      defineTask({ name: 'theirs', schema: z.unknown(), handler: () => 'theirs' }),
    ];
    const w = await createWorkerWorld(server.endpoint, defs, { workerTypes: 'mine' });
    const mine = (await w.submitter.enqueue({ type: 'mine', owner: 'o' })).task;
    const theirs = (await w.submitter.enqueue({ type: 'theirs', owner: 'o' })).task;
    const summary = await w.worker('pool').run({ idleStopMs: 1_000 });
    expect(summary.claimed).toBe(1);
    expect(await w.store.get({ id: mine.id })).toMatchObject({ status: 'SUCCESS' });
    expect(await w.store.get({ id: theirs.id })).toMatchObject({ status: 'QUEUED' });
    const other = await createWorkerWorld(server.endpoint, defs, { workerTypes: 'mine,nope' });
    expect(() => other.worker('bad')).toThrow(
      /LEASEHOLD_WORKER_TYPES: unknown task types nope; registered: mine, theirs/,
    );
  });
});

describe('the end of claiming', () => {
  it('tells the run once when no type can be claimed any more while a task still runs, then drains it to SUCCESS', async () => {
    let left = 60_000;
    const w = await createWorkerWorld(server.endpoint, [
      defineTask({
        name: 'slowish',
        schema: z.unknown(),
        timeoutMs: 2_000,
        handler: async () => {
          // The invocation's clock runs on: 2 s + the drain margin no longer fit, the margin still does.
          left = w.config.drainMarginMs + 300;
          await new Promise((r) => setTimeout(r, 200));
          return 'done';
        },
      }),
    ]);
    const { task } = await w.submitter.enqueue({ type: 'slowish', owner: 'o', payload: 1 });
    let told = 0;
    const summary = await w.worker('lambda-3').run({
      remainingTimeMs: () => left,
      idleStopMs: 5_000,
      onClaimingOver: () => told++,
    });
    expect(told).toBe(1);
    expect(summary).toMatchObject({ claimed: 1, stoppedBecause: 'deadline' });
    expect(await w.store.get({ id: task.id })).toMatchObject({ status: 'SUCCESS', result: 'done' });
  });

  it("is told once the longest type's window closes though shorter ones still fit; then claims nothing, of any type, and says whether it was taking a backlog", async () => {
    let left = 60_000;
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const w = await createWorkerWorld(
      server.endpoint,
      [
        defineTask({
          name: 'long',
          schema: z.unknown(),
          timeoutMs: 5_000,
          handler: async () => {
            // The window for `long` closes (5 s + the margin no longer fit); `short` would still fit.
            left = w.config.drainMarginMs + 2_000;
            await held;
            return 'long done';
          },
        }),
        defineTask({ name: 'short', schema: z.unknown(), timeoutMs: 1_000, handler: (p) => p }),
      ],
      { workerConcurrency: 1 },
    );
    const long = await w.submitter.enqueue({ type: 'long', owner: 'o', payload: 1 });
    const told: { backlog: boolean }[] = [];
    const running = w.worker('lambda-5').run({
      remainingTimeMs: () => left,
      idleStopMs: 5_000,
      onClaimingOver: (context) => {
        told.push(context);
        // Enqueued after the seat was given away: this run must leave it to the successor.
        void w.submitter
          .enqueue({ type: 'short', owner: 'o', payload: 2 })
          .then(() => setTimeout(release, 300));
      },
    });
    const summary = await running;
    // Its one slot was filled by the first round: it was taking a backlog.
    expect(told).toEqual([{ backlog: true }]);
    expect(summary).toMatchObject({ claimed: 1, stoppedBecause: 'deadline' });
    expect(await w.store.get({ id: long.task.id })).toMatchObject({ status: 'SUCCESS' });
    const shorts = await w.store.list({ owner: 'o', status: 'QUEUED' });
    expect(shorts.tasks.map((t) => t.type)).toEqual(['short']);
  });

  it('is not told while every type can still be claimed', async () => {
    const w = await createWorkerWorld(server.endpoint, [
      defineTask({ name: 'demo.echo', schema: z.unknown(), handler: (p) => p }),
    ]);
    await w.submitter.enqueue({ type: 'demo.echo', owner: 'o', payload: 1 });
    let told = 0;
    const summary = await w.worker('lambda-4').run({
      remainingTimeMs: () => 60_000,
      idleStopMs: 500,
      onClaimingOver: () => told++,
    });
    expect(summary).toMatchObject({ claimed: 1, stoppedBecause: 'idle' });
    expect(told).toBe(0);
  });
});
