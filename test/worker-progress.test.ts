/**
 * Progress reports that do not fit the store: one handler's `progress(0 / 0)` used
 * to fail its worker's whole renewal round, so every lease on the worker ran out and recovery handed
 * innocent tasks to other workers while they still ran.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { ValidationError } from '../shared/errors.js';
import { defineTask } from '../shared/tasks/define.js';
import { MAX_PROGRESS_NOTE_CHARS, sanitizeProgress } from '../shared/worker/progress.js';
import { startTestDynamo, type TestDynamo } from './support/test-dynamo.js';
import { TaskSubmitter } from '../shared/tasks/task-submitter.js';
import { MemoryHistory } from './chaos/history.js';
import { RecordingMetrics } from '../shared/metrics.js';
import { ManualClock } from './support/manual-clock.js';
import { createWorkerWorld, sleep } from './support/worker-world.js';

describe('sanitizeProgress', () => {
  it('ignores NaN, so the last report stands', () => {
    expect(sanitizeProgress(0 / 0, 'empty batch')).toBeUndefined();
  });

  it('clamps to 0..1, infinities included', () => {
    expect([Infinity, -Infinity, 1.5, -0.2, 0.25].map((f) => sanitizeProgress(f, undefined))).toEqual([
      { fraction: 1 },
      { fraction: 0 },
      { fraction: 1 },
      { fraction: 0 },
      { fraction: 0.25 },
    ]);
  });

  it('cuts a note to the store limit, never inside a surrogate pair', () => {
    expect(sanitizeProgress(0.5, 'x'.repeat(10_000))).toEqual({
      fraction: 0.5,
      note: 'x'.repeat(MAX_PROGRESS_NOTE_CHARS),
    });
    const emoji = `${'x'.repeat(MAX_PROGRESS_NOTE_CHARS - 1)}😀😀`; // the pair straddles the limit
    expect(sanitizeProgress(0.5, emoji)).toEqual({
      fraction: 0.5,
      note: 'x'.repeat(MAX_PROGRESS_NOTE_CHARS - 1),
    });
    expect(sanitizeProgress(0.5, 'short')).toEqual({ fraction: 0.5, note: 'short' });
  });

  it('refuses a fraction that is not a number, or a note that is not a string, with a ValidationError naming it', () => {
    expect(() => sanitizeProgress('50%', undefined)).toThrow(ValidationError);
    expect(() => sanitizeProgress('50%', undefined)).toThrow(
      /progress: fraction: must be a number from 0 to 1 \(got string\)/,
    );
    expect(() => sanitizeProgress(0.5, 7)).toThrow(/note: must be a string \(got number\)/);
  });
});

let server: TestDynamo;
beforeAll(async () => {
  server = await startTestDynamo();
});
afterAll(() => server.close());

/** Waits until `done()` holds, at most `ms`: the assertions after it say what was missing. */
async function waitFor(done: () => boolean, ms = 5_000): Promise<void> {
  const end = Date.now() + ms;
  while (!done() && Date.now() < end) await sleep(10);
}

describe('a handler that reports bad progress', () => {
  it('never stops the renewal of any lease on its worker: both tasks run once and succeed while recovery sweeps', async () => {
    const reported = new Set<string>();
    let release = false;
    let refused: unknown;
    const w = await createWorkerWorld(server.endpoint, [
      defineTask({
        name: 'job',
        schema: z.object({ name: z.string(), items: z.number() }),
        handler: async ({ name, items }, ctx) => {
          for (let done = 0; !release; done++) {
            if (ctx.signal.aborted) throw ctx.signal.reason;
            if (items === 0) {
              ctx.progress(done / items, 'nothing to do'); // 0/0 = NaN at first, Infinity after
              ctx.progress(0 / 0);
              ctx.progress(-Infinity, 'n'.repeat(1_000));
              ctx.progress(0 / 0);
              try {
                ctx.progress('half' as unknown as number);
              } catch (error) {
                refused = error;
              }
            } else ctx.progress(done / items, `item ${done}`);
            reported.add(name);
            await sleep(20);
          }
          return name;
        },
      }),
    ]);
    // Lease time is the test's: it moves only when the test moves it, so a loaded machine only makes
    // the test wait longer, never lets a lease run out that the worker would have renewed.
    const clock = new ManualClock(Date.now());
    const store = w.peer({ clock });
    const queue = new TaskSubmitter(store, w.registry, w.config);
    const empty = (
      await queue.enqueue({ type: 'job', owner: 'o', payload: { name: 'empty-batch', items: 0 } })
    ).task;
    const innocent = (
      await queue.enqueue({ type: 'job', owner: 'o', payload: { name: 'innocent', items: 1_000 } })
    ).task;
    const history = new MemoryHistory('w1');
    const metrics = new RecordingMetrics();
    const worker = w.worker('w1', { store, metrics, clock, history });
    const stop = new AbortController();
    const run = worker.run({ stop: stop.signal });
    await waitFor(() => reported.size === 2);

    // Past the lease and the skew margin in three steps, waiting at each for both leases to be renewed
    // beyond it; recovery sweeps after each step, as the recovery Lambda would.
    const recovery = w.peer({ clock });
    const renewedTo = (task: string, leaseUntil: number) =>
      history.events.some(
        (e) =>
          e.ev === 'renew' && e.task === task && e.outcome === 'renewed' && (e.leaseUntil ?? 0) >= leaseUntil,
      );
    let requeued = 0;
    for (let step = 0; step < 3; step++) {
      clock.advance(w.config.leaseTimeoutMs * 0.6);
      const leaseUntil = clock.now() + w.config.leaseTimeoutMs;
      await waitFor(() => renewedTo(empty.id, leaseUntil) && renewedTo(innocent.id, leaseUntil));
      requeued += (await recovery.recover()).requeued;
    }
    release = true;
    await waitFor(() => metrics.get('TasksSucceeded') + metrics.get('LateCompletionsRejected') === 2);
    stop.abort();
    await run;

    expect(requeued).toBe(0);
    expect(metrics.get('LeasesLost')).toBe(0);
    expect(metrics.get('LateCompletionsRejected')).toBe(0);
    expect(
      history.events
        .filter((e) => e.ev === 'start')
        .map((e) => e.task)
        .sort(),
    ).toEqual([empty.id, innocent.id].sort());
    expect(await w.store.get({ id: innocent.id })).toMatchObject({
      status: 'SUCCESS',
      attempts: 1,
      result: 'innocent',
    });
    // The last report that fit: -Infinity clamped to 0 with the note cut to the store's limit.
    expect(await w.store.get({ id: empty.id })).toMatchObject({
      status: 'SUCCESS',
      attempts: 1,
      result: 'empty-batch',
      progress: 0,
      progressNote: 'n'.repeat(MAX_PROGRESS_NOTE_CHARS),
    });
    expect(refused).toBeInstanceOf(ValidationError);
  });
});
